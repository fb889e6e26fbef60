"""GSI shards S per board when there are many leaderboards, weighted by each board's share of index writes (seed 003).

A view counts on the global board and on every category board its item belongs to (``cats``, ``user:123``...), so
the global board takes all the views and a category its share. Each board has its own GSI partition key values
``board#S#shard``; a board's S must keep its index writes per key under DynamoDB's 1,000 write units/s with
``HEADROOM`` (``planning.shards_for_index_writes``, the rule ``gsi_shards_for_writes`` applies to one board). With
a total shard budget, the shards are shared out in proportion to the boards' index writes (a board with 35 % of the
writes gets ~35 % of the shards), never below what the limit needs and never above N (beyond that a refresh reads
mostly the one-page-per-shard overhead, far more than N + S would suggest). The boards file is JSON or CSV;
``parse_boards`` reads both.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from shardboard.settings import DEFAULT_BOARD
from shardboard_tools.planning import (
    INDEX_WRITES_PER_RECORD,
    MAX_GSI_SHARDS,
    RefreshCost,
    refresh_cost,
    shards_for_index_writes,
)

GLOBAL_BOARD = DEFAULT_BOARD
BOARD_NAME = re.compile(r"[a-z0-9_.:-]{1,64}")
GLOBAL_TOP_N = 1000
CATEGORY_TOP_N = 100
# Index writes per view that reach the GSI. Worst case, every view is its own stream record and moves an indexed
# item's sort key: a delete and a put (INDEX_WRITES_PER_RECORD). With the sparse index (docs/sparse-index.md) only
# items at or above the threshold T write the index, and a batch folds many views of one item into one record, so
# the real figure is lower: 2 x the share of views that go to indexed items, per record. The default plans for the
# worst case, like `shardboard plan` does; pass a measured figure to plan tighter.
DEFAULT_INDEX_WRITES_PER_VIEW = float(INDEX_WRITES_PER_RECORD)


class BoardsFileError(ValueError):
    """The boards file is malformed (one line, for the CLI's one-line errors)."""


@dataclass(frozen=True)
class Board:
    name: str
    share: float
    top_n: int | None = None  # None: GLOBAL_TOP_N for the global board, CATEGORY_TOP_N for the others


@dataclass(frozen=True)
class BoardsFile:
    boards: tuple[Board, ...]
    views_per_sec: float | None  # JSON's "views_per_s"; CSV files have none (the command's --views-per-sec)


@dataclass(frozen=True)
class BoardPlan:
    board: str
    share: float  # of all views
    top_n: int
    index_writes_per_sec: float
    index_write_share: float  # of all boards' index writes: the weight of a shard budget
    min_shards: int  # what the 1,000 units/s per key limit with HEADROOM needs
    shards: int  # recommended S
    refresh_items_read: float
    peak_writes_per_key: float  # index writes/s per GSI partition key value at the planned rate; x HEADROOM <= 1,000

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def plan_boards(
    boards: Mapping[str, float],
    *,
    views_per_sec: float,
    index_writes_per_view: float = DEFAULT_INDEX_WRITES_PER_VIEW,
    top_n: Mapping[str, int] | None = None,
    global_top_n: int = GLOBAL_TOP_N,
    category_top_n: int = CATEGORY_TOP_N,
    total_shards: int | None = None,
    refresh: Callable[[int, int], RefreshCost] | None = refresh_cost,
) -> list[BoardPlan]:
    """One row per board (the global board first, then by share): its index writes, S and refresh cost.

    ``boards`` maps category boards to their share of views (0..1; the global board, always 100 %, is added).
    Without ``total_shards`` each board gets the least S its index writes need; with it, the budget is shared out
    by index writes, each board kept within [its minimum, max(minimum, N)]. A budget smaller than the minimums is
    exceeded: the partition limit wins. ``refresh=None`` estimates a refresh's items read as N + S.
    """
    if views_per_sec < 0 or not math.isfinite(views_per_sec):
        raise ValueError("views_per_sec must be a finite number >= 0")
    if index_writes_per_view < 0 or not math.isfinite(index_writes_per_view):
        raise ValueError("index_writes_per_view must be a finite number >= 0")
    if global_top_n < 1 or category_top_n < 1:
        raise ValueError("top N must be at least 1")
    if total_shards is not None and total_shards < 1:
        raise ValueError("total_shards must be at least 1")
    shares = {GLOBAL_BOARD: 1.0}
    for name, share in boards.items():
        _check_board(name, share)
        if name == GLOBAL_BOARD and share != 1:
            raise ValueError(f"board {GLOBAL_BOARD!r} counts every view: its share is 1, not {share:g}")
        shares[name] = share
    sizes = {name: (top_n or {}).get(name, global_top_n if name == GLOBAL_BOARD else category_top_n) for name in shares}
    writes = {name: views_per_sec * share * index_writes_per_view for name, share in shares.items()}
    all_writes = sum(writes.values())
    all_shares = sum(shares.values())  # >= 1: the global board's
    weights = {name: writes[name] / all_writes if all_writes else shares[name] / all_shares for name in shares}
    low = {name: shards_for_index_writes(w) for name, w in writes.items()}
    too_many = [name for name, need in low.items() if need > MAX_GSI_SHARDS]
    if too_many:
        raise ValueError(f"board {too_many[0]!r} needs {low[too_many[0]]} GSI shards, more than {MAX_GSI_SHARDS}")
    high = {name: max(low[name], min(sizes[name], MAX_GSI_SHARDS)) for name in shares}
    chosen = low if total_shards is None else apportion(total_shards, weights, low, high)
    costs: dict[tuple[int, int], float] = {}
    rows = []
    for name in sorted(shares, key=lambda board: (board != GLOBAL_BOARD, -shares[board], board)):
        n, s = sizes[name], chosen[name]
        if (n, s) not in costs:
            costs[n, s] = float(n + s) if refresh is None else refresh(n, s).items_read
        rows.append(
            BoardPlan(
                board=name,
                share=shares[name],
                top_n=n,
                index_writes_per_sec=writes[name],
                index_write_share=weights[name],
                min_shards=low[name],
                shards=s,
                refresh_items_read=costs[n, s],
                peak_writes_per_key=writes[name] / s,
            )
        )
    return rows


def apportion(
    budget: int, weights: Mapping[str, float], low: Mapping[str, int], high: Mapping[str, int]
) -> dict[str, int]:
    """Integers in [low, high] in proportion to ``weights``, summing to ``budget`` when the bounds allow it.

    Boards whose proportional part falls outside their bounds are pinned to the bound and the rest of the budget is
    shared again among the others; the last parts are rounded by largest remainder.
    """
    pinned: dict[str, int] = {}
    while True:
        free = [name for name in weights if name not in pinned]
        left = budget - sum(pinned.values())
        weight = sum(weights[name] for name in free)
        ideal = {name: (left * weights[name] / weight if weight > 0 else left / len(free)) for name in free}
        out = {name: low[name] for name in free if ideal[name] < low[name]}
        out |= {name: high[name] for name in free if ideal[name] > high[name]}
        if not out:
            break
        pinned |= out
    result = {name: math.floor(ideal[name]) for name in free} | pinned
    spare = left - sum(result[name] for name in free)
    for name in sorted(free, key=lambda board: (result[board] - ideal[board], board))[: max(0, spare)]:
        result[name] += 1
    return {name: result[name] for name in weights}


def _check_board(name: object, share: object) -> None:
    if not isinstance(name, str) or not BOARD_NAME.fullmatch(name):
        raise BoardsFileError(f"board name {name!r} does not match [a-z0-9_.:-]{{1,64}}")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise BoardsFileError(f"board {name!r}: share {share!r} is not a number between 0 and 1")


def parse_boards(text: str, filename: str = "") -> BoardsFile:
    """A boards file: JSON ``{"views_per_s": 5000, "boards": {"cats": 0.35, ...}}`` or CSV lines ``board,share``.

    JSON boards may also be ``{"share": 0.35, "top": 50}``, CSV lines ``board,share,top``; a CSV header line
    ``board,share[,top]``, blank lines and ``#`` comments are skipped. A ``.json`` name or a text that starts with
    ``{`` is JSON, anything else CSV.
    """
    if filename.lower().endswith(".json") or (not filename.lower().endswith(".csv") and text.lstrip().startswith("{")):
        return _parse_json(text)
    return _parse_csv(text)


def _parse_json(text: str) -> BoardsFile:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise BoardsFileError(f"not valid JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("boards"), dict):
        raise BoardsFileError('expected a JSON object {"views_per_s": ..., "boards": {"name": share, ...}}')
    rate = document.get("views_per_s")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < math.inf):
        raise BoardsFileError(f"views_per_s {rate!r} is not a number >= 0")
    boards = []
    for name, value in document["boards"].items():
        share, top = (value.get("share"), value.get("top")) if isinstance(value, dict) else (value, None)
        _check_board(name, share)
        assert isinstance(share, int | float)  # _check_board saw to it
        boards.append(Board(name, float(share), _top(name, top)))
    return BoardsFile(tuple(boards), None if rate is None else float(rate))


def _parse_csv(text: str) -> BoardsFile:
    boards: dict[str, Board] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if number == 1 and [cell.lower() for cell in cells[:2]] == ["board", "share"]:
            continue
        if len(cells) not in (2, 3):
            raise BoardsFileError(f"line {number}: expected board,share[,top], got {','.join(cells)!r}")
        try:
            share = float(cells[1])
        except ValueError:
            raise BoardsFileError(f"line {number}: share {cells[1]!r} is not a number") from None
        _check_board(cells[0], share)
        if cells[0] in boards:
            raise BoardsFileError(f"line {number}: board {cells[0]!r} appears twice")
        top = cells[2] if len(cells) == 3 else None
        boards[cells[0]] = Board(cells[0], share, _top(cells[0], int(top) if top and top.isdigit() else top))
    return BoardsFile(tuple(boards.values()), None)


def _top(name: str, top: object) -> int | None:
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise BoardsFileError(f"board {name!r}: top {top!r} is not an integer >= 1")
    return top
