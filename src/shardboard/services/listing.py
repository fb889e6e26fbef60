"""Listing a stack for its frontends: the boards that hold views, the periods a board can be read in, and each
board's N and D (``GET /boards``), so a page offers only what the stack answers instead of links to a 400."""

from __future__ import annotations

from shardboard.domain.boards import is_reserved
from shardboard.domain.periods import kind_of
from shardboard.domain.ports import PeriodLedger
from shardboard.domain.windows import split_names
from shardboard.schema import BoardList, BoardListed
from shardboard.settings import Settings

ALL_TIME = "all"


def periods(settings: Settings) -> list[str]:
    """All time, the calendar kinds and trending as ``period=`` takes them (finest first), then the windows."""
    kinds, windows = split_names(settings.periods)
    return [ALL_TIME, *kinds, *(window.name for window in windows)]


def boards(ledger: PeriodLedger, settings: Settings, script: str) -> BoardList:
    """Every board with an all-time period item (a board exists once a view names it), the default one first; not
    the reserved boards of crawlers' views (``bots``), which are readable by name but offered to no visitor."""
    named = {
        status.period.board
        for status in ledger.periods()
        if kind_of(status.period.kind).pick(all_time=True, period=False) and not is_reserved(status.period.board)
    }
    ordered = [settings.board, *sorted(named - {settings.board})]
    return BoardList(
        board=settings.board,
        boards=[
            BoardListed(name=name, top_n=settings.top_n_of(name), depth=settings.rank_depth_of(name))
            for name in ordered
        ],
        periods=periods(settings),
        top_n=settings.top_n,
        category_top_n=settings.category_top_n,
        page_size=settings.page_size,
        refresh_seconds=settings.refresh_seconds,
        script=script,
    )
