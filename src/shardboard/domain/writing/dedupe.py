"""Honest counts: a view that names a ``viewer`` counts at most once per (viewer, item, window).

Windows are fixed: window ``w`` holds the times ``w * seconds <= t < (w + 1) * seconds`` (UTC epoch seconds), so
the question "did this viewer already count this item in this window?" has one exact answer, kept in one marker item
per (window, viewer, item) that a transaction creates together with the counter write (docs/honest-counts.md).
A viewer can count twice across a window boundary (once just before it, once just after).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

# The template's DedupeWindow default: one view per viewer and item per UTC day (86,400 s).
DEFAULT_DEDUPE_WINDOW_SECONDS = 86_400
MIN_DEDUPE_WINDOW_SECONDS = 60
# Markers expire (TTL) this long after their window ends: a retry of a view posted at the end of a window still
# finds its marker; markers of past windows are never read again (the window is part of their key).
MARKER_GRACE_SECONDS = 3_600


@dataclass(frozen=True)
class Seen:
    """One viewed view: who viewed, in which window, until when its marker is kept, and the token of this logical
    view (one per call, reused by every retry of it), so a retry whose earlier attempt landed finds its own marker
    and reports the view as counted, not as a duplicate."""

    viewer: str
    window: int
    expires_at: int
    token: str

    @classmethod
    def of(cls, viewer: str, window_seconds: int, at: float, token: str | None = None) -> Seen:
        """A view of ``viewer`` at ``at`` (epoch seconds, the caller's clock) in its dedupe window."""
        window = int(at // window_seconds)
        expires_at = (window + 1) * window_seconds + MARKER_GRACE_SECONDS
        return cls(viewer, window, expires_at, token or uuid.uuid4().hex)


@dataclass(frozen=True)
class SeenOutcome:
    """What a viewed view's write did: ``counted`` (False: the viewer was seen already, nothing was written) and
    the write units it consumed (a refused transaction consumes some too)."""

    counted: bool
    units: float
