"""Look-alikes of deleted ids (domain/items/lookalike.py): the UTS #39 skeleton, and the property that no id a view
is accepted for reads as a deleted one, through the deny and skeleton markers of the in-memory items table, whether
their listing holds every marker or the check asks about each id."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from shardboard.domain import validation
from shardboard.domain.errors import BadInput
from shardboard.domain.items.lookalike import LookAlike, LookAlikeCheck, skeleton, skeleton_marker
from shardboard.domain.items.records import DELETED, SKELETONS, DenyCheck, UnknownItem, admit_all
from shardboard.domain.items.taken_down import TakenDown
from shardboard.services.recording import Admission, accept
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryItemStore
from tests.conftest import examples

# The look-alikes an attack had ranked #1 after banned.jpg and café.jpg were deleted (NFKC takes the fullwidth ones)
AT = datetime(2026, 11, 23, tzinfo=UTC)  # when the views are recorded
ATTACK = [
    ("b\u0430nned.jpg", "banned.jpg"),  # Cyrillic a
    ("banned\uff0ejpg", "banned.jpg"),  # fullwidth full stop
    ("\uff42anned.jpg", "banned.jpg"),  # fullwidth b
    ("cafe\u0301.jpg", "caf\u00e9.jpg"),  # NFD
    ("c\u0430f\u00e9.jpg", "caf\u00e9.jpg"),
    ("\U0001d41banned.jpg", "banned.jpg"),  # mathematical bold b
    ("com", "corn"),  # one script: m reads as rn
]


@pytest.mark.parametrize(("look_alike", "original"), ATTACK)
def test_a_look_alike_has_the_skeleton_of_what_it_imitates(look_alike, original):
    assert skeleton(look_alike) == skeleton(original)
    assert skeleton_marker(look_alike) == skeleton_marker(original)


@pytest.mark.parametrize(("one", "other"), [("banned.jpg", "banner.jpg"), ("a", "b"), ("caf\u00e9", "cafe")])
def test_ids_that_read_differently_have_different_skeletons(one, other):
    assert skeleton_marker(one) != skeleton_marker(other)


def test_a_skeleton_marker_is_small_and_no_item_id():
    # Even for an id NFKC lengthens eighteenfold (U+FDFA is a whole phrase)
    marker = skeleton_marker("\ufdfa" * 170)
    assert len(marker.encode()) < 64
    with pytest.raises(BadInput, match="control character"):
        validation.lookup_item_id(marker)


# Characters and their look-alikes the property builds ids from: Latin with Cyrillic, Greek, fullwidth and
# mathematical twins, digits that read as letters, and decomposed accents.
TWINS = {
    "a": ["\u0430", "\uff41", "\U0001d41a"],
    "b": ["\uff42", "\u13cf"],
    "e": ["\u0435", "\uff45"],
    "o": ["\u043e", "\u03bf", "0"],
    "l": ["1", "I", "\u04cf"],
    "m": ["rn"],
    "p": ["\u0440"],
    ".": ["\uff0e", "\u2024"],
    "\u00e9": ["e\u0301", "\u0435\u0301"],
}
BASE = st.text(st.sampled_from([*sorted(TWINS), "n", "j", "g", "x", "_"]), min_size=1, max_size=8)


@st.composite
def look_alike_of(draw: st.DrawFn, original: str) -> str:
    """``original`` with some characters swapped for twins."""
    chars = [draw(st.sampled_from([char, *TWINS.get(char, [])])) for char in original]
    return "".join(chars)


@settings(max_examples=examples(200), deadline=None)
@given(st.data(), st.lists(BASE, min_size=1, max_size=4, unique=True), st.sampled_from([None, 1]))
def test_no_accepted_id_shares_a_skeleton_with_a_deleted_one(data, deleted, limit):
    # Given deleted ids in the items table (a listing of every marker, or one of 1 so that each id is looked up)
    store = MemoryItemStore(CapacityEmulator(VirtualClock()))
    for item in deleted:
        store.set_deleted(item, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    admit = admit_all(
        DenyCheck(lambda: TakenDown.read(store, (DELETED,), limit=limit)),
        LookAlikeCheck(lambda: TakenDown.read(store, (SKELETONS,), limit=limit)),
    )
    # When views of look-alikes of them, of the ids themselves and of other ids arrive
    candidates = data.draw(
        st.lists(st.one_of(st.sampled_from(deleted).flatmap(look_alike_of), BASE), min_size=1, max_size=12)
    )
    banned = {skeleton(item) for item in deleted}
    accepted = []
    for candidate in candidates:
        try:
            accepted.append(accept(Admission(admit), "day", [candidate], at=AT).item_ids[0])
        except LookAlike:
            event("a look-alike refused")
            # Then a look-alike is refused only for what it imitates (never the deleted id itself: that one is denied)
            assert skeleton(candidate) in banned
            assert unicodedata.normalize("NFC", candidate) not in deleted
        except UnknownItem:
            assert unicodedata.normalize("NFC", candidate) in deleted
    # Then no accepted id reads as a deleted one
    assert not [item for item in accepted if skeleton(item) in banned]
    # And every id that reads as none of them is accepted
    assert len(accepted) == sum(skeleton(candidate) not in banned for candidate in candidates)


def test_a_stack_with_nothing_deleted_never_computes_a_skeleton(monkeypatch):
    # Given no skeleton markers, and a skeleton that would fail if it were asked for
    def unwanted(_: str) -> str:
        raise AssertionError("the confusables data was needed")

    monkeypatch.setattr("shardboard.domain.items.lookalike.skeleton_marker", unwanted)
    check = LookAlikeCheck(lambda: TakenDown([]))
    # Then every well-formed id is admitted without one
    assert check("b\u0430nned.jpg") and check("banned.jpg")


def test_the_check_reads_the_markers_once_per_ttl():
    # Given a check over a view read at most every 10 s of a fake clock
    now = [0.0]
    reads = []

    def read():
        reads.append(now[0])
        return TakenDown([skeleton_marker("banned.jpg")])

    check = LookAlikeCheck(read, ttl=10.0, clock=lambda: now[0])
    # When ids are checked over 25 s
    with pytest.raises(LookAlike, match="reads as a deleted id"):
        check("b\u0430nned.jpg")
    for moment in (1.0, 9.9, 10.0, 24.0):
        now[0] = moment
        assert check("kept.jpg")
    # Then the markers were read when each 10 s had passed: at 0, 10 and 24, never at 1 or 9.9
    assert reads == [0.0, 10.0, 24.0]
