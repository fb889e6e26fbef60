"""GET /rank: rank and percentile of up to 100 ids in one period, from the snapshot head and its ranked version.

Requests: the head (one GetItem) answers ids in its top N and its R spares; one BatchGetItem of rank shards answers
ids within D; the ids in neither cost one BatchGetItem of the items table together (their takedown status: a hidden
or deleted item answers so, however old the version is) and each one GetItem more for its views (aggregate or past
entry; none for a deleted item). One id: at most 4 requests, at any depth.

Every answer agrees with the head (the snapshot the board shows): an id it holds is ranked from it, and ``of`` is
never below what it shows nor below any rank answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardboard.domain.items.records import DELETED
from shardboard.domain.periods import kind_of
from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import AggregateReads, ItemCatalog, PeriodKey, RankReads, RankShard
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.ranked_versions import rank_shard_of
from shardboard.domain.reading.percentiles import (
    RankAnswer,
    approx_rank,
    board_size,
    exclusions,
    head_entries,
    head_ranks,
    head_size,
    percentile,
    rank_of,
    tail_points,
    taken_down,
    zipf_exponent,
)


def lookup_ranks(
    board: RankReads,
    policy: Leaderboards,
    period: PeriodKey,
    head: Head,
    ids: Sequence[str],
    *,
    catalog: ItemCatalog,
) -> list[RankAnswer]:
    """One answer per id, in the order asked (a repeated id is answered once per time asked)."""
    block = head.rank
    entries = head_entries(head)
    in_head = head_ranks(entries)
    if block is None:  # no ranked versions (D = N): the head is the whole ranking the stack keeps
        depth, count, as_of = policy.keep(period.board).top_n, len(head.items), head.generated_at
        last_views, last_tie = (head.items[-1].views, in_head[head.items[-1].id][0]) if head.items else (0, 0)
        tail = [[position, views] for position, (_, views) in enumerate(head.items, start=1)]
        exponent = zipf_exponent(tail[depth // 10 :])
    else:
        depth, count, as_of = block.depth, block.count, block.generated_at
        last_views, last_tie = block.last
        exponent = zipf_exponent(tail_points(block.pages, depth))
    events = block.events if block else ()
    excluded = exclusions(events)
    of, of_exact = board_size(count, depth, last_views, exponent)
    # Positions taken down since the version was written leave the board: fewer entries, ranks below them rise.
    of, count, last_tie = of - len(excluded), count - len(excluded), rank_of(last_tie, excluded)
    # The head is never older than its version: the board holds at least what it shows, and no more when it is short.
    of, of_exact = head_size((of, of_exact), head)
    wanted = [item for item in dict.fromkeys(ids) if item not in in_head]
    shards: RankShard = {}
    if block is not None and wanted:
        by_shard = {item: rank_shard_of(item, block.shards) for item in wanted}
        found = board.get_rank_shards(period, block.rv, sorted(set(by_shard.values())))
        shards = {item: found[shard][item] for item, shard in by_shard.items() if item in found.get(shard, {})}
    # An id that neither the head nor the version holds may have been taken down before the version was gathered,
    # or past its depth: its record says so, whatever the version's age (one BatchGetItem of the items table).
    unranked = [item for item in wanted if item not in shards]
    statuses = catalog.statuses(unranked) if unranked else {}
    answers: dict[str, RankAnswer] = {}
    for item in dict.fromkeys(ids):
        status = taken_down(events, item) if item in shards else statuses.get(item)
        if item in in_head:
            rank, views = in_head[item]
            answers[item] = RankAnswer(
                item, views, rank, percentile(rank, of), of, of_exact, False, "snapshot", head.generated_at
            )
        elif status:
            # No rank for a hidden or deleted item: the source says why. A deleted item's counts are erased; a
            # hidden one's go on.
            if status == DELETED:
                views = 0
            else:
                views = shards[item].views if item in shards else current_views(board, policy, period, item)
            answers[item] = RankAnswer(item, views, None, None, of, of_exact, False, status, as_of)
        elif item in shards:
            _, tie_start, views = shards[item]
            rank = rank_of(tie_start, excluded)
            answers[item] = RankAnswer(item, views, rank, percentile(rank, of), of, of_exact, False, "ranked", as_of)
        else:
            views = current_views(board, policy, period, item)
            if views == 0:
                answers[item] = RankAnswer(item, 0, None, None, of, of_exact, False, "none", as_of)
                continue
            floor = 1 + sum(1 for _, more in entries if more > views)
            version = (count, depth, last_views, last_tie)
            answers[item] = beyond(
                item, views, version, exponent=exponent, size=(of, of_exact), as_of=as_of, floor=floor
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
    floor: int = 1,
) -> RankAnswer:
    """An id past the version: ``rank`` null, the model's rank and percentile labelled approximate. Views equal to
    (or, counted since, above) the last entry's tie with it, so the model rank is that entry's rank. ``floor``: the
    rank the head allows it, 1 + its entries with more views (they only gain views; the id is not among them)."""
    count, depth, last_views, last_tie = version
    of, of_exact = size
    if count > 0 and views >= last_views:
        model = last_tie
    else:  # (an empty version, gathered before any views, has no last entry to tie with)
        model = approx_rank(views, count, last_views, exponent, max(of, count + 1))
    model = max(model, floor)
    # A model rank past ``of`` means the board grew since: ``of`` grows with it, and is no longer exact.
    of, of_exact = max(of, model), of_exact and model <= of
    return RankAnswer(item, views, None, percentile(model, of), of, of_exact, True, "beyond", as_of, depth, model)


def current_views(board: AggregateReads, policy: Leaderboards, period: PeriodKey, item_id: str) -> int:
    """The item's count in the period now: its aggregate (all time, or a current period), else its past entry."""
    state = board.state(period.board, item_id)
    if kind_of(period.kind).pick(all_time=True, period=False):
        return state.views
    if state.bucket is not None and policy.periods.bucket(period.kind, state.bucket) == period.bucket:
        return state.count(period.kind)
    return board.entry_state(period, item_id).views
