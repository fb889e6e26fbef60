"""Rate limits of public views (docs/honest-counts.md "Rate limits"): with ``PublicViews`` a client
(a source IP, and the viewer when one is named) may record at most so many views per fixed one-minute window.

API Gateway HTTP APIs throttle a route for all clients together only, so the limit lives here: one allowance counter
per (client, window), taken by a conditional ``ADD`` before the view is written and given back when the view is not
(a throttled write), so a refused view writes nothing and an allowance counts views that counted.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from shardboard.domain.errors import BadInput
from shardboard.domain.ports import Allowance, AllowanceCounters, Throttled

# The limits are per minute (ViewsPerIpPerMinute, ViewsPerViewerPerMinute): fixed windows of this many seconds.
RATE_WINDOW_SECONDS = 60
# Allowance counters expire (the views table's TTL) this long after their window ends: nothing reads a past window
# again (the window is part of the key), so the grace only covers clocks a little apart between containers.
ALLOWANCE_GRACE_SECONDS = 300
# IPv6 clients are limited per /64, the block one subscriber (a home, a phone) is usually given: a per-address limit
# would be evaded by rotating addresses inside it.
IPV6_CLIENT_PREFIX = 64
IP, VIEWER = "ip", "viewer"


@dataclass(frozen=True)
class RateLimits:
    """Views per client per window; 0 turns a limit off. The template sets both to 0 unless PublicViews=true: a
    server-side writer behind IAM or JWT sends many users' views from one IP."""

    per_ip: int = 0
    per_viewer: int = 0
    window_seconds: int = RATE_WINDOW_SECONDS

    def __post_init__(self) -> None:
        if self.per_ip < 0 or self.per_viewer < 0 or self.window_seconds < 1:
            raise ValueError(f"rate limits must be >= 0 and the window >= 1 s, got {self}")


class RateLimited(Exception):
    """A client used its allowance for this window: nothing was written."""

    def __init__(self, allowance: Allowance) -> None:
        super().__init__(f"more than {allowance.limit} views per {allowance.kind} in this window")
        self.allowance = allowance


def ip_client(source_ip: str | None) -> str:
    """The client an address stands for: an IPv4 address, or an IPv6 address's /64 network. ``source_ip`` is API
    Gateway's ``requestContext.http.sourceIp`` (never X-Forwarded-For, which any client can write); a value that is
    not an address is its own client, and a missing one is the client ``unknown``, so neither escapes the limit."""
    if not source_ip:
        return "unknown"
    try:
        address = ipaddress.ip_interface(source_ip.strip()).ip
    except ValueError:
        return source_ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # ::ffff:a.b.c.d is the IPv4 client a.b.c.d, not one shared /64
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(address)


def allowances(
    limits: RateLimits, source_ip: str | None, viewer: str | None, views: int = 1, *, at: float
) -> tuple[Allowance, ...]:
    """The allowances a request of ``views`` views needs at ``at`` (epoch seconds, the caller's clock): its IP's
    and, when it names one, its viewer's (only the limits that are on). A request larger than a limit is bad input
    (400), not a 429: no window would ever admit it, so a client told to retry later would retry for ever."""
    window = int(at // limits.window_seconds)
    end = (window + 1) * limits.window_seconds
    wanted = [(IP, ip_client(source_ip), limits.per_ip)]
    if viewer is not None:
        wanted.append((VIEWER, viewer, limits.per_viewer))
    for kind, _, limit in wanted:
        if 0 < limit < views:
            raise BadInput(f"count {views} is more than the {limit} views per {kind} per minute this API accepts")
    return tuple(
        Allowance(kind, client, window, limit, views, end + ALLOWANCE_GRACE_SECONDS, max(1, math.ceil(end - at)))
        for kind, client, limit in wanted
        if limit > 0
    )


@contextmanager
def within(counters: AllowanceCounters, wanted: Sequence[Allowance]) -> Iterator[None]:
    """Take every allowance in ``wanted`` (raising RateLimited at the first refused one), run the body (the view's
    write), and give the allowances back if the body raised: a client's allowance is spent only on views written.
    An allowance taken before a refused one is given back too."""
    taken: list[Allowance] = []
    try:
        for allowance in wanted:
            if not counters.take_allowance(allowance):
                raise RateLimited(allowance)
            taken.append(allowance)
        yield
    except BaseException:
        for allowance in reversed(taken):
            # A return that fails leaves the client fewer views in this window (never more); the first error
            # is the answer.
            with suppress(Throttled):
                counters.return_allowance(allowance)
        raise
