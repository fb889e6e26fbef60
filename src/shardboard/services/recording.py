"""Recording views: the use case behind ``POST /views``, the CLI's ``record`` and the library's
:class:`~shardboard.client.Recorder`.

Each entry point parses its own input and calls one function here: :func:`record` (one id, the HTTP API),
:func:`record_each` (several ids, the CLI) or :func:`accept` (the library, which buffers what was accepted and writes
it later, coalesced). Every rule of a write (ids, count, viewer, boards, RequireItems, the Boards policy) is checked
in :func:`accept`, once, before anything is written.
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
from shardboard.domain.ports import AllowanceCounters, RetrySafeViewCounters
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.domain.writing.idempotency import KeyedRequest, fingerprint
from shardboard.domain.writing.rate_limit import allowances, within
from shardboard.domain.writing.recording import (
    Recorded,
    Where,
    admitted,
    record_keyed_view,
    record_seen_view,
    record_views,
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
    (BadInput), then RequireItems for every id (UnknownItem), then the Boards policy (BoardNotAllowed; a new board
    it allows is registered). Nothing is written when any of them refuses. A ``user_agent`` of a known crawler
    moves the views to the reserved boards (``bots``, ``bots:<board>``): no public board counts them, no board is
    registered."""
    ids = tuple(validation.item_id(item_id) for item_id in item_ids)
    views = validation.view_count(count)
    who = validation.viewer(viewer)
    validation.viewed_count(views, who)
    names = validation.boards(boards)
    agent = validation.user_agent(user_agent)
    for item_id in ids:
        admitted(item_id, admission.admit)
    if agent is not None and is_crawler(agent):
        names = bot_boards(names)
    elif admission.gate is not None:
        names = admission.gate.admit(names)
    return Accepted(ids, views, who, Where(bucket_of(anchor, at), names))


def record(
    writes: ViewWrites,
    item_id: str,
    count: object = 1,
    boards: object = (),
    viewer: object = None,
    *,
    key: str | None = None,
    caller: PublicCaller | None = None,
    user_agent: object = None,
    browser: Browser | None = None,
    origin: str | None = None,
) -> Recording:
    """Record ``count`` views of ``item_id`` in one counter write (docs/honest-counts.md for ``viewer`` and the
    Idempotency-``key``). With ``caller`` the rate limits take an allowance first (RateLimited: nothing written) and
    give it back when the write fails. Raises Throttled when nothing could be written.

    The user agent judged for crawlers is ``user_agent`` (a backend recording for its visitor), else a ``browser``'s
    own; a browser's single view without a viewer gets its anonymous viewer id (unless the site opted out). A
    request from a page (``origin``, its Origin header) outside the stack's allowed origins raises
    OriginNotAllowed."""
    if not writes.settings.origin_allowed(origin):
        raise OriginNotAllowed(f"views sent from pages of {origin} are not taken by this stack (PublicViews)")
    agent = user_agent if user_agent is not None else browser.user_agent if browser is not None else None
    now = writes.clock()
    accepted = accept(
        writes.admission,
        writes.settings.anchor,
        [item_id],
        count,
        boards=boards,
        viewer=viewer,
        user_agent=agent,
        at=now,
    )
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
    one (the admission was checked by :func:`accept`)."""
    settings, where, who = writes.settings, accepted.where, accepted.viewer
    seen = None if who is None else Seen.of(who, settings.dedupe_window_seconds, now.timestamp())
    if key is not None:
        keyed = KeyedRequest.of(key, fingerprint(item_id, accepted.count, where.boards, who), now.timestamp())
        return record_keyed_view(
            writes.views,
            item_id,
            accepted.count,
            settings.write_shards,
            keyed,
            seen=seen,
            router=writes.router,
            where=where,
        )
    if seen is None:
        return record_views(
            writes.views, item_id, accepted.count, settings.write_shards, router=writes.router, where=where
        )
    return record_seen_view(writes.views, item_id, settings.write_shards, seen, router=writes.router, where=where)
