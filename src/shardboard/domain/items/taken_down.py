"""Which ids a reader drops because they are hidden or deleted, read in proportion to what the reader asks.

Each taken-down id has its own marker in the items table (``ItemCatalog``), so no item fills up however many ids are
banned. A reader never needs every id, only whether the ids at hand are taken down: the aggregator and the writers
those of a batch or a view, a gather its candidates. A ``TakenDown`` first lists each status (one Query per
partition, at most ``LISTING_LIMIT`` markers in all): while a status holds fewer, that listing is all of them and
membership costs nothing more; past it, the ids asked about are looked up by their markers (one BatchGetItem per 100
ids, once per id for as long as the view lives), until those lookups would read more than listing every id, when it
lists them instead. At 100,000 bans of 512-byte ids an aggregator batch of 300 ids reads ~650 units, not the ~7,500
of reading every id (docs/proposals/items-and-ranks.md, "Takedown markers").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet

from shardboard.domain.items.records import DELETED, HIDDEN
from shardboard.domain.ports import ItemCatalog

# How many markers of one status a listing reads at most before the reader switches to asking per id: a whole
# listing of that many (a marker is its id's bytes plus 24: 64 KB of 40-byte ids, 550 KB of 512-byte ones) costs no
# more than looking up a batch's few hundred ids one 4 KB step each, and a small site never looks anything up.
LISTING_LIMIT = 1024

# Those of the ids asked that hold the status (a marker lookup).
Lookup = Callable[[Sequence[str]], frozenset[str]]
# The bytes a listing of every id of a status reads, and that listing.
Relist = tuple[int, Callable[[], frozenset[str]]]
# A read unit's step: a marker read costs one, as 4 KB of a listing do (eventually consistent or not alike).
READ_UNIT_BYTES = 4096


class TakenDown:
    """Membership of taken-down ids: ``among(ids)`` (one lookup for the lot), ``id in view``, ``bool(view)``: whether
    anything may be taken down. Answers are kept for the life of the view (one snapshot run, one batch, 10 s of a
    writer's cache), so each id costs at most one lookup per view; thread-safe (a run's gathers share it)."""

    def __init__(
        self,
        listed: Iterable[str] = (),
        lookup: Lookup | None = None,
        *,
        relist: Relist | None = None,
        parts: Sequence[TakenDown] = (),
        including: Iterable[str] = (),
        excluding: Iterable[str] = (),
    ) -> None:
        """``listed``: ids known taken down; ``lookup``: how to ask about the others (None: ``listed`` is all of
        them); ``relist``: a listing of all of them and its bytes, taken instead of more lookups once those would
        read more; ``parts``: other views whose ids count too; ``including``/``excluding``: ids taken down (visible)
        whatever the rest says."""
        self._listed = frozenset(listed)
        self._lookup = lookup
        self._relist = relist
        self._parts = tuple(parts)
        self._including = frozenset(including)
        self._excluding = frozenset(excluding)
        self._answers: dict[str, bool] = {}
        self._lock = threading.Lock()

    @classmethod
    def read(
        cls,
        catalog: ItemCatalog,
        statuses: Sequence[str] = (HIDDEN, DELETED),
        *,
        consistent: bool = False,
        limit: int | None = None,
    ) -> TakenDown:
        """The ids of ``statuses`` as ``catalog`` holds them now (``consistent``: strongly consistent reads; ``limit``:
        the listing's, LISTING_LIMIT by default)."""
        parts = []
        for status in statuses:
            listing = catalog.list_taken_down(status, LISTING_LIMIT if limit is None else limit, consistent)
            if listing.complete:
                parts.append(cls(listing.ids))
                continue
            relist = None if listing.size is None else (listing.size, _relist(catalog, status, consistent))
            parts.append(cls(listing.ids, _lookup(catalog, status, consistent), relist=relist))
        return parts[0] if len(parts) == 1 else cls(parts=parts)

    def among(self, item_ids: Iterable[str]) -> frozenset[str]:
        """Those of ``item_ids`` that are taken down."""
        asked = set(item_ids) - self._excluding
        found = asked & (self._listed | self._including)
        if self._lookup is not None and asked - found:
            found |= self._looked_up(asked - found)
        for part in self._parts:
            if not asked - found:
                break
            found |= part.among(asked - found)
        return frozenset(found)

    def _looked_up(self, item_ids: set[str]) -> set[str]:
        """Those of ``item_ids`` (none of them listed) that the markers name. Each marker read costs what 4 KB of a
        listing does: once the lookups of this view would pass what listing every id reads, it lists them instead
        (so a view costs at most about twice the cheaper of the two, however many ids it is asked about)."""
        with self._lock:
            lookup, relist = self._lookup, self._relist
            unknown = sorted(item for item in item_ids if item not in self._answers)
            if relist is not None and (len(self._answers) + len(unknown)) * READ_UNIT_BYTES >= relist[0]:
                self._relist = None  # one listing per view: threads asking meanwhile look up as before
            else:
                relist = None
        if lookup is None:  # listed whole meanwhile
            return item_ids & self._listed
        if relist is not None:
            listed = relist[1]()
            with self._lock:
                self._listed, self._lookup = self._listed | listed, None
            return item_ids & listed
        if unknown:
            hits = lookup(unknown)  # outside the lock: a run's other gathers go on meanwhile
            with self._lock:
                self._answers.update((item, item in hits) for item in unknown)
        with self._lock:
            return {item for item in item_ids if self._answers[item]}

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and bool(self.among((item_id,)))

    def __bool__(self) -> bool:
        """Whether any id may be taken down (False: none is, so nothing needs dropping)."""
        return bool(self._listed - self._excluding or self._including or self._lookup is not None or any(self._parts))

    def __or__(self, other: TakenDown) -> TakenDown:
        return TakenDown(parts=(self, other))

    def including(self, *item_ids: str) -> TakenDown:
        """This view with ``item_ids`` taken down (the id a hide is about, whatever a stale read says)."""
        return TakenDown(parts=(self,), including=item_ids)

    def excluding(self, *item_ids: str) -> TakenDown:
        """This view with ``item_ids`` visible (the id an unhide is about)."""
        return TakenDown(parts=(self,), excluding=item_ids)


# What the gathers take: a view, or a plain set of ids (tools and tests that know them all).
Dropped = TakenDown | AbstractSet[str]


def dropped_among(dropped: Dropped, item_ids: Iterable[str]) -> frozenset[str]:
    """Those of ``item_ids`` that ``dropped`` names (one lookup for the lot when it is a view)."""
    if isinstance(dropped, TakenDown):
        return dropped.among(item_ids)
    return frozenset(item for item in item_ids if item in dropped)


def deleted_among(catalog: ItemCatalog, item_ids: Iterable[str], consistent: bool = False) -> frozenset[str]:
    """Those of ``item_ids`` that are deleted (the aggregator asks before and after its writes)."""
    asked = set(item_ids)
    return TakenDown.read(catalog, (DELETED,), consistent=consistent).among(asked) if asked else frozenset()


def _lookup(catalog: ItemCatalog, status: str, consistent: bool) -> Lookup:
    return lambda item_ids: catalog.taken_down_among(item_ids, status, consistent)


def _relist(catalog: ItemCatalog, status: str, consistent: bool) -> Callable[[], frozenset[str]]:
    return lambda: catalog.list_taken_down(status, None, consistent).ids
