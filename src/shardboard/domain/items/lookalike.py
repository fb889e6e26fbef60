"""Look-alikes of deleted ids: the confusables skeleton of Unicode's UTS #39, and the check that refuses a new id
whose skeleton a deleted id shares (docs/bad-input.md, "Look-alike ids").

Two ids with one skeleton read as one to a visitor (``banned.jpg``, ``b\\u0430nned.jpg`` with a Cyrillic a,
``\\uff42anned.jpg`` in fullwidth). A delete writes a marker keyed by its id's skeleton beside the deny marker, and a
view or a put of an id whose skeleton is marked is refused, at the cost of the deny check (one cached listing of the
markers per container, or one marker read per id past LISTING_LIMIT).

The confusables data is Unicode's confusables.txt as the ``confusable-homoglyphs`` package ships it: each pair in
both directions, so the prototype of a character is recovered from the pairs' shape (a prototype is never a source,
so it is the member of its class that several sources point at).
"""

from __future__ import annotations

import functools
import hashlib
import time
import unicodedata
from collections.abc import Callable, Container

from confusable_homoglyphs import confusables

from shardboard.domain.errors import BadInput
from shardboard.domain.items.records import ADMIT_TTL_SECONDS, DELETED, SKELETONS, CachedView
from shardboard.domain.ports import ItemCatalog

# How confusables.txt's right-to-left characters arrive in the package's data: wrapped in directional marks.
_DIRECTION_MARKS = str.maketrans("", "", "\u200e\u200f")
# The prefix of a skeleton's marker "id": no item id starts with a control character, so none is ever taken for one.
SKELETON_PREFIX = "\x00skeleton:"


class LookAlike(BadInput):
    """A new id that reads as a deleted one (one UTS #39 skeleton): HTTP 400, CLI exit 2, the library's BadInput."""

    def __init__(self, item_id: str) -> None:
        shown = repr(item_id) if len(item_id) <= 40 else repr(item_id[:37]) + "..."
        super().__init__(f"id {shown} reads as a deleted id (one Unicode confusables skeleton): choose another id")
        self.item_id = item_id


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype (loaded at the first skeleton, not at import: a cold start that never
    records never reads the 900 KB of data)."""
    pairs: dict[str, list[str]] = {}
    for source, glyphs in confusables.confusables_data.items():
        others = pairs.setdefault(source.translate(_DIRECTION_MARKS), [])
        others += [glyph["c"].translate(_DIRECTION_MARKS) for glyph in glyphs]
    prototypes: dict[str, str] = {}
    for char, listed in pairs.items():
        others = list(dict.fromkeys(listed))
        if len(char) != 1 or len(others) != 1:
            continue  # a prototype (several sources point at it), or a sequence (only ever a prototype)
        other = others[0]
        if len(set(pairs.get(other, ()))) > 1 or len(other) > 1:
            prototypes[char] = other
        else:
            # A class of two (one source, one prototype) shows no direction: both go to one of them, the same one
            # whichever is asked, so they still share a skeleton.
            prototypes[char] = min(char, other)
    return prototypes


def skeleton(text: str) -> str:
    """UTS #39's skeleton of ``text`` after NFKC (which folds the fullwidth and compatibility forms the confusables
    data leaves to normalization): NFD, each character replaced by its prototype, NFD again."""
    prototypes = _prototypes()
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    return unicodedata.normalize("NFD", "".join(prototypes.get(char, char) for char in decomposed))


def skeleton_marker(item_id: str) -> str:
    """The marker "id" of ``item_id``'s skeleton: a digest, so a skeleton that NFKC and the prototypes lengthen past
    a key's 1,024 bytes still has a small fixed-size one."""
    digest = hashlib.blake2b(skeleton(item_id).encode("utf-8", errors="surrogatepass"), digest_size=16)
    return SKELETON_PREFIX + digest.hexdigest()


class LookAlikeCheck:
    """Refuses (LookAlike) an id whose skeleton a deleted id has: a view of the skeleton markers (``read``:
    ``TakenDown.read`` of SKELETONS), read afresh at most once per ``ttl`` seconds per container, as DenyCheck reads
    the deny markers. Admits (True) every other id; the deleted id itself is the deny check's to refuse."""

    def __init__(
        self,
        read: Callable[[], Container[str]],
        ttl: float = ADMIT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,  # a TTL's age, not a time of day
    ) -> None:
        self._marked = CachedView(read, ttl, clock)

    def __call__(self, item_id: str) -> bool:
        refuse_look_alike(item_id, self._marked())
        return True


def refuse_look_alike(item_id: str, marked: Container[str]) -> None:
    """LookAlike when ``marked`` (skeleton markers, or a view of them) holds ``item_id``'s skeleton. An empty view
    asks nothing: a stack that deleted nothing never loads the confusables data (~75 ms at a cold start)."""
    if marked and skeleton_marker(item_id) in marked:
        raise LookAlike(item_id)


def refuse_put_of_look_alike(catalog: ItemCatalog, item_id: str) -> None:
    """A put's check (admin rate: read afresh, strongly consistent): LookAlike when a deleted id has ``item_id``'s
    skeleton, unless ``item_id`` is that deleted id (a put of a deleted id is not a look-alike's)."""
    marked = catalog.taken_down_among([skeleton_marker(item_id)], SKELETONS, consistent=True)
    if marked and not catalog.taken_down_among([item_id], DELETED, consistent=True):
        raise LookAlike(item_id)
