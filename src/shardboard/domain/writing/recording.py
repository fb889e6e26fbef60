"""Record views: a request's ``count`` views are one counter write on a randomly chosen write shard of its item.

One write per request, however large its count, so a request either counts every view or none: a failed request is
safe to retry. The aggregator takes any step of a counter (stream records carry absolute OLD and NEW values).
With a :class:`~shardboard.domain.writing.dynamic_sharding.ShardRouter` the shard range is the item's current count
(docs/dynamic-sharding.md), and a write throttled at the partition level grows it before the write is retried in
the larger range.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from shardboard.domain import validation
from shardboard.domain.boards import BoardGate
from shardboard.domain.items.records import UnknownItem
from shardboard.domain.periods import ALL, bucket_of
from shardboard.domain.ports import RetrySafeViewCounters, SeenViewCounters, Throttled, ViewCounters
from shardboard.domain.retrying import retry_throttled
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.domain.writing.idempotency import Answer, KeyedRequest, OnceOutcome, OnceWrite

# Shard choice only needs to be uniform, not secret.
_RNG = random.Random()


@dataclass(frozen=True)
class Recorded:
    item_id: str
    views: int
    write_units: float
    duplicate: bool = False  # a viewer's view seen already in its dedupe window: nothing was written
    replayed: bool = False  # a keyed request's retry: answered as the first request was, nothing written now


@dataclass(frozen=True)
class Where:
    """Where a request's views count: the anchor bucket of their time and the category boards they name."""

    bucket: str = ALL
    boards: tuple[str, ...] = ()

    @classmethod
    def of(cls, anchor: str, boards: Sequence[str] = (), *, at: datetime, gate: BoardGate | None = None) -> Where:
        """Where views recorded ``at`` (the caller's clock) count; ``gate``: the stack's Boards policy (see
        allowed_boards)."""
        return cls(bucket_of(anchor, at), allowed_boards(list(boards), gate))


def allowed_boards(value: object, gate: BoardGate | None) -> tuple[str, ...]:
    """The category boards a view names (``validation.boards``), admitted by the stack's board policy: every entry
    point (POST /views, the CLI's record, the library's Recorder) asks here before it writes. A board the policy
    refuses raises BoardNotAllowed (a BadInput); a new board it allows is registered. None: no policy (tools that
    build their own boards, benchmarks)."""
    names = validation.boards(value)
    return names if gate is None else gate.admit(names)


def record_views(
    views: ViewCounters,
    item_id: str,
    count: int,
    write_shards: int,
    rng: random.Random | None = None,
    *,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
    admit: Callable[[str], bool] | None = None,
) -> Recorded:
    """Record ``count`` views of ``item_id`` in one counter write, on the global board and every board in
    ``where``; bad input, or a write that fails, writes nothing.

    Without ``router`` every item has ``write_shards`` shards; with it, each item has its own (dynamic) count.
    ``admit`` (RequireItems) refuses ids it answers False for with UnknownItem, before anything is written.
    """
    item_id = validation.item_id(item_id)
    count = validation.view_count(count)
    admitted(item_id, admit)
    units = write_views(views, item_id, count, write_shards, rng, router=router, sleep=sleep, where=where)
    return Recorded(item_id, count, units)


def admitted(item_id: str, admit: Callable[[str], bool] | None) -> None:
    if admit is not None and not admit(item_id):
        raise UnknownItem(item_id)


def write_views(
    views: ViewCounters,
    item_id: str,
    count: int,
    write_shards: int,
    rng: random.Random | None = None,
    *,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
) -> float:
    """The write of :func:`record_views`, for input validated already: ``count`` views of ``item_id`` in one
    counter write (``ADD``) on a random write shard of the item's current range, whatever the count. The library
    (``shardboard.client``) writes through it the views it coalesced from many validated calls. Returns the write
    units consumed; raises Throttled when it wrote nothing."""
    rng = rng or _RNG
    if router is None:
        return views.add_view(item_id, rng.randrange(write_shards), count, where.bucket, where.boards)
    return add_routed_view(views, router, item_id, rng, sleep, count=count, where=where)


def record_seen_view(
    views: SeenViewCounters,
    item_id: str,
    write_shards: int,
    seen: Seen,
    rng: random.Random | None = None,
    *,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
    admit: Callable[[str], bool] | None = None,
) -> Recorded:
    """Record ONE view of ``item_id`` by ``seen.viewer``, unless that viewer's view of the item counted already in
    ``seen``'s dedupe window: then nothing is written and the result says ``duplicate`` (docs/honest-counts.md).
    A throttled attempt is retried on another shard with the same ``seen`` (its token), so a retry whose earlier
    attempt landed is recognised, never counted twice. Raises Throttled when every attempt was throttled."""
    item_id = validation.item_id(item_id)
    validation.viewer(seen.viewer)
    admitted(item_id, admit)
    return write_seen_view(views, item_id, write_shards, seen, rng, router=router, sleep=sleep, where=where)


def write_seen_view(
    views: SeenViewCounters,
    item_id: str,
    write_shards: int,
    seen: Seen,
    rng: random.Random | None = None,
    *,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
) -> Recorded:
    """The write of :func:`record_seen_view`, for input checked already (services/recording.py checks each rule
    once per request)."""

    def write(shard: int) -> Recorded:
        outcome = views.add_seen_view(item_id, shard, seen, where.bucket, where.boards)
        return Recorded(item_id, 1 if outcome.counted else 0, outcome.units, duplicate=not outcome.counted)

    return _on_a_shard(write, item_id, write_shards, rng=rng or _RNG, router=router, sleep=sleep)


def attempt_view(
    views: ViewCounters, router: ShardRouter, item_id: str, count: int = 1, where: Where = Where()
) -> float | None:
    """One write on a shard the router picks; None when it was throttled (the router has reacted to it)."""
    shard, drawn_from = router.pick(item_id)
    try:
        return views.add_view(item_id, shard, count, where.bucket, where.boards)
    except Throttled as throttled:
        router.throttled(item_id, throttled.scope, drawn_from)
        return None


def add_routed_view(
    views: ViewCounters,
    router: ShardRouter,
    item_id: str,
    rng: random.Random,
    sleep: Callable[[float], None] = time.sleep,
    *,
    count: int = 1,
    where: Where = Where(),
) -> float:
    """Write ``count`` views, retrying throttled attempts with jittered back-off (a retry may use a larger range)."""

    def write(shard: int) -> float:
        return views.add_view(item_id, shard, count, where.bucket, where.boards)

    return _on_a_shard(write, item_id, 0, rng=rng, router=router, sleep=sleep)


_Written = TypeVar("_Written")


def record_keyed_view(
    views: RetrySafeViewCounters,
    item_id: str,
    count: int,
    write_shards: int,
    keyed: KeyedRequest,
    *,
    seen: Seen | None = None,
    rng: random.Random | None = None,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
    admit: Callable[[str], bool] | None = None,
) -> Recorded:
    """Record ``count`` views of a request carrying an Idempotency-Key (``keyed``), once per key whatever the
    retries (docs/honest-counts.md, "Retried writes"): the first request of a key counts, a retry of it writes
    nothing and is answered as the first was (``replayed``); a key used by another request raises
    ``IdempotencyKeyReused``. With ``seen`` the view also counts once per viewer (a duplicate is remembered under
    the key as its answer). A throttled attempt is retried on another shard with the same key: if an earlier attempt
    landed its marker answers. Raises Throttled when every attempt was throttled (nothing written)."""
    item_id = validation.item_id(item_id)
    count = validation.view_count(count)
    if seen is not None:
        validation.viewer(seen.viewer)
        validation.viewed_count(count, seen.viewer)
    admitted(item_id, admit)
    return write_keyed_view(
        views, item_id, count, write_shards, keyed, seen=seen, rng=rng, router=router, sleep=sleep, where=where
    )


def write_keyed_view(
    views: RetrySafeViewCounters,
    item_id: str,
    count: int,
    write_shards: int,
    keyed: KeyedRequest,
    *,
    seen: Seen | None = None,
    rng: random.Random | None = None,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
    where: Where = Where(),
) -> Recorded:
    """The write of :func:`record_keyed_view`, for input checked already."""

    def write(shard: int) -> Recorded:
        done = views.add_keyed_view(item_id, shard, count, keyed, seen=seen, bucket=where.bucket, boards=where.boards)
        duplicate = done.answer is Answer.DUPLICATE
        return Recorded(item_id, 0 if duplicate else count, done.units, duplicate=duplicate, replayed=done.replayed)

    return _on_a_shard(write, item_id, write_shards, rng=rng or _RNG, router=router, sleep=sleep)


def _on_a_shard(
    write: Callable[[int], _Written],
    item_id: str,
    write_shards: int,
    *,
    rng: random.Random,
    router: ShardRouter | None,
    sleep: Callable[[float], None],
) -> _Written:
    """``write`` on a random shard; with a router, a throttled attempt grows the range and is retried after a
    jittered back-off (only for writes that a retry on another shard cannot count twice)."""
    if router is None:
        return write(rng.randrange(write_shards))

    def attempt() -> _Written:
        shard, drawn_from = router.pick(item_id)
        try:
            return write(shard)
        except Throttled as throttled:  # the range grows for the next attempt and the item's later writes
            router.throttled(item_id, throttled.scope, drawn_from)
            raise

    return retry_throttled(attempt, rng=rng, sleep=sleep)


def writer_shard(writer: int, item_id: str, shards: int) -> int:
    """The write shard a retry-safe writer uses for ``item_id`` while the item has ``shards``: fixed per (writer,
    item), uniform over writers, so a counter item holds the attributes of about writers / shards writers instead
    of every writer's (docs/honest-counts.md, "Retried writes")."""
    digest = hashlib.blake2b(f"{writer}#{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def write_views_once(
    views: RetrySafeViewCounters, item_id: str, count: int, shard: int, once: OnceWrite, *, where: Where = Where()
) -> OnceOutcome:
    """The retry-safe counter write of the library's Recorder: ``count`` views of ``item_id`` on ``shard`` in ONE
    conditional UpdateItem that also records ``once.sequence`` as the writer's last write on that counter item.

    Exactly once, given the writer's discipline (the Recorder keeps it): its writer number is its own, its sequences
    increase, and it sends a write on a counter item only when its previous write there is known applied; a write
    whose outcome is unknown (a lost response, a timeout, an error after botocore's retries, a throttle that may
    follow a landed attempt) is retried unchanged, same shard, count, boards and sequence. Then the writer's
    attribute on the item is at least ``once.sequence`` exactly when this write was applied, so the condition
    (absent or lower) admits it once and refuses every later attempt, which reports ``applied_now`` False: counted,
    not failed. Raises Throttled (this attempt wrote nothing; an earlier one may have: retry it unchanged)."""
    done: OnceOutcome = views.add_view_once(item_id, shard, count, once, bucket=where.bucket, boards=where.boards)
    return done
