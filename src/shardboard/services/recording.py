"""Recording views: the use case behind ``POST /views``, the CLI's ``record`` and the library's
:class:`~shardboard.client.Recorder`.

Each entry point parses its own input and calls one function here: :func:`record` (one id, the HTTP API),
:func:`record_each` (several ids, the CLI) or :func:`accept` (the library, which buffers what was accepted and writes
it later, coalesced). Every rule of a write is checked once, before anything is written: the input's (ids, count,
viewer, boards, user agent) in :func:`checked`, or by the HTTP API's request model, whose validators are the same
rules; RequireItems and the Boards policy in :func:`admit`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from shardboard.domain import validation
from shardboard.domain.boards import BoardGate, is_reserved
from shardboard.domain.clock import Clock
from shardboard.domain.periods import bucket_of
from shardboard.domain.ports import AllowanceCounters, RetrySafeViewCounters, SeenViewCounters, Throttled
from shardboard.domain.retrying import MAX_WRITE_ATTEMPTS, retry_throttled
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.domain.writing.idempotency import KeyedRequest, OnceOutcome, OnceWrite, fingerprint
from shardboard.domain.writing.rate_limit import allowances, within
from shardboard.domain.writing.recording import (
    Recorded,
    Where,
    admitted,
    write_keyed_view,
    write_seen_view,
    write_views,
    write_views_once,
    writer_shard,
)
from shardboard.domain.writing.visitors import AnonymousViewers, bot_boards, is_crawler
from shardboard.services.clock import system_clock
from shardboard.services.stores import Container
from shardboard.settings import Settings

# Counter writes in flight at once when one request names several ids (the CLI's `record a b c`).
MAX_PARALLEL_WRITES = 16


class ViewWriter(RetrySafeViewCounters, AllowanceCounters, Protocol):
    """The base table as a write request uses it: the counters (plain, viewed, keyed) and the rate limits'
    allowances."""


@dataclass(frozen=True)
class Admission:
    """What decides whether a well-formed view is taken: RequireItems (``admit``: whether an id was created; None:
    any id) and the Boards policy (``gate``: it registers a new board it allows; None: any well-formed board)."""

    admit: Callable[[str], bool] | None = None
    gate: BoardGate | None = None


@dataclass(frozen=True)
class ViewWrites:
    """What a write request needs: the base table, the stack's settings (anchor period, write shards, dedupe window,
    rate limits), the shard router of dynamic sharding (None: every item has WriteShards) and the admission rules."""

    views: ViewWriter
    settings: Settings
    router: ShardRouter | None = None
    admission: Admission = Admission()
    # Anonymous browsers' viewer ids (docs/honest-counts.md); None: the site opted out.
    anonymous: AnonymousViewers | None = None
    clock: Clock = system_clock  # when a request's views count (their period bucket)

    @classmethod
    def of(cls, stores: Container) -> ViewWrites:
        """The writes of a stack's stores: the ones the API function builds."""
        admission = Admission(stores.admission, stores.boards)
        return cls(stores.views, stores.settings, stores.router, admission, stores.anonymous, stores.clock)


@dataclass(frozen=True)
class Accepted:
    """A write request that passed every rule: its ids, views per id, viewer and where the views count."""

    item_ids: tuple[str, ...]
    count: int
    viewer: str | None
    where: Where


@dataclass(frozen=True)
class PublicCaller:
    """The sender of a public ``POST /views`` (PublicViews): the stack's rate limits apply to its address (API
    Gateway's own view of it, never a header the client wrote) and to the viewer it names."""

    source_ip: str | None


class OriginNotAllowed(Exception):
    """A browser's view from a page whose origin the stack does not take: nothing written (HTTP 403)."""


@dataclass(frozen=True)
class Browser:
    """A view a page sent itself (a ``text/plain`` body, navigator.sendBeacon): the address and the User-Agent header
    of its request, which judge a crawler and make an anonymous viewer id."""

    address: str
    user_agent: str


@dataclass(frozen=True)
class Recording:
    """What a request recorded, one Recorded per id in the order given, and every board its views count on (the
    global board first, then the others by name)."""

    recorded: list[Recorded]
    boards: list[str]
    viewed: bool = False  # a viewer's view (named, or a browser's anonymous id): answered with its duplicate flag


@dataclass(frozen=True)
class ViewInput:
    """A write request's input that passed its rules (:func:`checked`, or the HTTP API's request model, whose
    validators are the same rules): the ids, views per id, boards named, viewer and user agent to judge."""

    item_ids: tuple[str, ...]
    count: int = 1
    boards: tuple[str, ...] = ()
    viewer: str | None = None
    user_agent: str | None = None


def checked(
    item_ids: Sequence[str], count: object = 1, boards: object = (), viewer: object = None, user_agent: object = None
) -> ViewInput:
    """The input's rules, each run once per request (BadInput when one refuses)."""
    ids = tuple(validation.item_id(item_id) for item_id in item_ids)
    views = validation.view_count(count)
    who = validation.viewer(viewer)
    validation.viewed_count(views, who)
    return ViewInput(ids, views, validation.boards(boards), who, validation.user_agent(user_agent))


def accept(
    admission: Admission,
    anchor: str,
    item_ids: Sequence[str],
    count: object = 1,
    *,
    boards: object = (),
    viewer: object = None,
    at: datetime,
    user_agent: object = None,
) -> Accepted:
    """Check a request of ``count`` views of each of ``item_ids`` on the global board and ``boards``, recorded ``at``
    (the request's time; ``anchor``: the finest period, which names the counters' bucket): the input's rules
    (BadInput), then :func:`admit`. Nothing is written when any of them refuses."""
    return admit(admission, anchor, checked(item_ids, count, boards, viewer, user_agent), at)


def admit(admission: Admission, anchor: str, request: ViewInput, at: datetime) -> Accepted:
    """RequireItems for every id of a checked ``request`` recorded ``at`` (UnknownItem), then the Boards policy
    (BoardNotAllowed; a new board it allows is registered). A ``user_agent`` of a known crawler moves the views to the
    reserved boards (``bots``, ``bots:<board>``): no public board counts them, no board is registered."""
    for item_id in request.item_ids:
        admitted(item_id, admission.admit)
    names = request.boards
    if request.user_agent is not None and is_crawler(request.user_agent):
        names = bot_boards(names)
    elif admission.gate is not None:
        names = admission.gate.admit(names)
    return Accepted(request.item_ids, request.count, request.viewer, Where(bucket_of(anchor, at), names))


def record(
    writes: ViewWrites,
    request: ViewInput,
    *,
    key: str | None = None,
    caller: PublicCaller | None = None,
    browser: Browser | None = None,
    origin: str | None = None,
) -> Recording:
    """Record the views of a checked ``request`` (one id) in one counter write (docs/honest-counts.md for its viewer
    and the Idempotency-``key``). With ``caller`` the rate limits take an allowance first (RateLimited: nothing
    written) and give it back when the write fails. Raises Throttled when nothing could be written.

    The user agent judged for crawlers is the request's (a backend recording for its visitor), else a ``browser``'s
    own; a browser's single view without a viewer gets its anonymous viewer id (unless the site opted out). A
    request from a page (``origin``, its Origin header) outside the stack's allowed origins raises
    OriginNotAllowed."""
    if not writes.settings.origin_allowed(origin):
        raise OriginNotAllowed(f"views sent from pages of {origin} are not taken by this stack (PublicViews)")
    if request.user_agent is None and browser is not None:
        request = replace(request, user_agent=validation.user_agent(browser.user_agent))
    now = writes.clock()
    accepted = admit(writes.admission, writes.settings.anchor, request, now)
    if accepted.viewer is None and accepted.count == 1 and browser is not None and writes.anonymous is not None:
        accepted = replace(accepted, viewer=writes.anonymous.viewer(browser.address, browser.user_agent))
    who = accepted.viewer
    limits = writes.settings.rate_limits
    wanted = () if caller is None else allowances(limits, caller.source_ip, who, accepted.count, at=now.timestamp())
    with within(writes.views, wanted):
        recorded = _write(writes, accepted, accepted.item_ids[0], now, key)
    return Recording([recorded], answered_boards(writes.settings, accepted), who is not None)


def record_each(
    writes: ViewWrites,
    item_ids: Sequence[str],
    count: object = 1,
    boards: object = (),
    viewer: object = None,
    *,
    user_agent: object = None,
) -> Recording:
    """Record ``count`` views of each of ``item_ids``, one counter write per id (in parallel). Every id passes every
    rule before the first write; a crawler's ``user_agent`` counts them on the reserved boards only."""
    now = writes.clock()
    accepted = accept(
        writes.admission,
        writes.settings.anchor,
        item_ids,
        count,
        boards=boards,
        viewer=viewer,
        user_agent=user_agent,
        at=now,
    )
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL_WRITES, len(accepted.item_ids)))) as pool:
        recorded = list(pool.map(lambda item_id: _write(writes, accepted, item_id, now), accepted.item_ids))
    return Recording(recorded, answered_boards(writes.settings, accepted))


def answered_boards(settings: Settings, accepted: Accepted) -> list[str]:
    """The boards the views count on, as an answer names them: the global board (except for a crawler's: the reserved
    boards only), then the others by name. Sorted as the Idempotency-Key's fingerprint sorts them, so a retry naming
    them in another order is answered byte for byte as the first was."""
    names = sorted(accepted.where.boards)
    return names if any(is_reserved(name) for name in names) else [settings.board, *names]


def _write(writes: ViewWrites, accepted: Accepted, item_id: str, now: datetime, key: str | None = None) -> Recorded:
    """One id's counter write at ``now`` (the request's time): a plain ``ADD``, a viewer's transaction, or a keyed
    one (every rule was checked once, before: :func:`accept`)."""
    settings, where, who = writes.settings, accepted.where, accepted.viewer
    seen = None if who is None else Seen.of(who, settings.dedupe_window_seconds, now.timestamp())
    if key is not None:
        keyed = KeyedRequest.of(key, fingerprint(item_id, accepted.count, where.boards, who), now.timestamp())
        return write_keyed_view(
            writes.views,
            item_id,
            accepted.count,
            settings.write_shards,
            keyed,
            seen=seen,
            router=writes.router,
            where=where,
        )
    return write_accepted(writes.views, settings.write_shards, writes.router, item_id, accepted.count, where, seen)


def write_accepted(  # noqa: PLR0917 - one accepted key's write
    views: SeenViewCounters,
    write_shards: int,
    router: ShardRouter | None,
    item_id: str,
    count: int,
    where: Where,
    seen: Seen | None = None,
) -> Recorded:
    """The views of an accepted request (or of many, coalesced by the library) in one counter write: a plain ``ADD``
    on a random shard of the item's range, or with ``seen`` a viewer's transaction."""
    if seen is None:
        units = write_views(views, item_id, count, write_shards, router=router, where=where)
        return Recorded(item_id, count, units)
    return write_seen_view(views, item_id, write_shards, seen, router=router, where=where)


def once_shard(write_shards: int, router: ShardRouter | None, writer: int, item_id: str) -> tuple[int, int]:
    """The shard a retry-safe writer sends ``item_id``'s write to, and the range it was drawn from."""
    shards = router.shards(item_id) if router else write_shards
    return writer_shard(writer, item_id, shards), shards


def write_once(  # noqa: PLR0917 - one retry-safe write, sent unchanged at every attempt
    views: RetrySafeViewCounters,
    router: ShardRouter | None,
    item_id: str,
    count: int,
    target: tuple[int, int],
    once: OnceWrite,
    where: Where,
) -> OnceOutcome:
    """A retry-safe write (:func:`write_views_once`) on ``target`` (its shard and the range it was drawn from),
    sent unchanged at every attempt. With a router a throttled attempt grows the item's range for later writes and
    is tried again after the back-off; without one its Throttled is raised at once."""
    shard, drawn_from = target

    def attempt() -> OnceOutcome:
        try:
            return write_views_once(views, item_id, count, shard, once, where=where)
        except Throttled as throttled:
            if router is not None:
                router.throttled(item_id, throttled.scope, drawn_from)
            raise

    return retry_throttled(attempt, attempts=MAX_WRITE_ATTEMPTS if router is not None else 1)
