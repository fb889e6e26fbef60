"""GET /rank: rank and percentile of up to 100 ids in one period, from the snapshot head and its ranked version.

Requests: the head (one GetItem) answers ids in its top N; one BatchGetItem of rank shards answers ids within D;
an id past D costs one more GetItem for its views (aggregate or past entry). One id: at most 3 requests, at any
depth (the issue's target: <= S + 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shardboard.domain.periods import ALL, coarser_bucket
from shardboard.domain.ports import Board, PeriodKey
from shardboard.domain.rank_versions import rank_shard_of
from shardboard.domain.ranked import (
    RankAnswer,
    approx_rank,
    board_size,
    exclusions,
    head_ranks,
    percentile,
    rank_of,
    tail_points,
    taken_down,
    zipf_exponent,
)
from shardboard.settings import Settings


def lookup_ranks(
    board: Board, settings: Settings, period: PeriodKey, head: Mapping[str, Any], ids: Sequence[str]
) -> list[RankAnswer]:
    """One answer per id, in the order asked (a repeated id is answered once per time asked)."""
    block = head.get("rank")
    in_head = head_ranks(head["items"])
    if block is None:  # no ranked versions (D = N): the head is the whole ranking the stack keeps
        depth, count, as_of = settings.top_n_of(period.board), len(head["items"]), head["generated_at"]
        last_views, last_tie = (head["items"][-1][1], in_head[head["items"][-1][0]][0]) if head["items"] else (0, 0)
        tail = [[position, views] for position, (_, views) in enumerate(head["items"], start=1)]
        exponent = zipf_exponent(tail[depth // 10 :])
    else:
        depth, count, as_of = block["depth"], block["count"], block["generated_at"]
        last_views, last_tie = block["last"]
        exponent = zipf_exponent(tail_points(block["pages"], depth))
    events = block.get("events", []) if block else []
    excluded = exclusions(events)
    of, of_exact = board_size(count, depth, last_views, exponent)
    # Positions taken down since the version was written leave the board: fewer entries, ranks below them rise.
    of, count, last_tie = of - len(excluded), count - len(excluded), rank_of(last_tie, excluded)
    wanted = [item for item in dict.fromkeys(ids) if item not in in_head]
    shards: dict[str, list[int]] = {}
    if block is not None and wanted:
        by_shard = {item: rank_shard_of(item, block["shards"]) for item in wanted}
        found = board.get_rank_shards(period, block["rv"], sorted(set(by_shard.values())))
        shards = {item: found[shard][item] for item, shard in by_shard.items() if item in found.get(shard, {})}
    answers: dict[str, RankAnswer] = {}
    for item in dict.fromkeys(ids):
        if item in in_head:
            rank, views = in_head[item]
            answers[item] = RankAnswer(
                item, views, rank, percentile(rank, of), of, of_exact, False, "snapshot", head["generated_at"]
            )
        elif item in shards and taken_down(events, item):
            # No rank for a hidden or deleted item: the source says why.
            status = taken_down(events, item) or ""
            answers[item] = RankAnswer(item, shards[item][2], None, None, of, of_exact, False, status, as_of)
        elif item in shards:
            _, tie_start, views = shards[item]
            rank = rank_of(tie_start, excluded)
            answers[item] = RankAnswer(item, views, rank, percentile(rank, of), of, of_exact, False, "ranked", as_of)
        else:
            views = current_views(board, settings, period, item)
            if views == 0:
                answers[item] = RankAnswer(item, 0, None, None, of, of_exact, False, "none", as_of)
                continue
            answers[item] = beyond(
                item, views, (count, depth, last_views, last_tie), exponent=exponent, size=(of, of_exact), as_of=as_of
            )
    return [answers[item] for item in ids]


def beyond(
    item: str,
    views: int,
    version: tuple[int, int, int, int],
    *,
    exponent: float | None,
    size: tuple[int, bool],
    as_of: str,
) -> RankAnswer:
    """An id past the version: ``rank`` null, the model's rank and percentile labelled approximate. Views equal to
    (or, counted since, above) the last entry's tie with it, so the model rank is that entry's rank."""
    count, depth, last_views, last_tie = version
    of, of_exact = size
    model = last_tie if views >= last_views else approx_rank(views, count, last_views, exponent, max(of, count + 1))
    of = max(of, model)
    return RankAnswer(item, views, None, percentile(model, of), of, of_exact, True, "beyond", as_of, depth, model)


def current_views(board: Board, settings: Settings, period: PeriodKey, item_id: str) -> int:
    """The item's count in the period now: its aggregate (all time, or a current period), else its past entry."""
    state = board.state(period.board, item_id)
    if period.kind == ALL:
        return state.views
    if state.bucket is not None and coarser_bucket(period.kind, settings.anchor, state.bucket) == period.bucket:
        return state.count(period.kind)
    return board.entry_state(period, item_id).views
