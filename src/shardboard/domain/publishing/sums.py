"""The exact top N of a sum of periods: a rolling window is the sum of its hour periods (domain/windows.py).

Each part is a period whose index lists its items best first, and is sparse: every item whose count reached the
part's published threshold T is keyed. So an item a part's gather did not return holds at most the last count that
gather read (when it stopped at its depth) and at most T - 1 (when it is not keyed): the part's *bound*. An item no
gather returned sums to at most U, the sum of the bounds. A candidate's sum is known exactly once its missing counts
are read back. When the N-th best candidate sums to more than U, no other item can enter the top N: the answer is
exact (Fagin's threshold algorithm, with the sparse index's T as one more bound). Otherwise the parts whose bound is
their gather's last count read deeper; when only thresholds bound them, the sum is ``proven=False`` and the caller
counts every item instead. docs/rolling-windows.md has the argument and what it costs.

Reads are pruned as in Fagin's NRA: a candidate is read back only while its upper bound (its known counts plus the
bounds of the parts it is missing from) can still reach the N-th best lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shardboard.domain.publishing.gather import Entry, top


@dataclass(frozen=True)
class Part:
    """One part's gather: its best visible keyed items (``top``, best first), whether the gather stopped at its depth
    (``more``: keyed items below may remain) and the part's published threshold (0: every item is keyed)."""

    top: Sequence[Entry]
    more: bool
    threshold: int

    @property
    def bound(self) -> int:
        """The most an item this gather did not return can count in this part."""
        read = self.top[-1].views if self.more and self.top else 0
        return max(read, self.threshold - 1, 0)

    @property
    def deepens(self) -> bool:
        """Whether reading deeper can lower the bound (it is the last count read, not the threshold)."""
        return self.more and bool(self.top) and self.top[-1].views >= self.threshold


@dataclass(frozen=True)
class Summed:
    top: list[Entry]  # the best ``n`` by sum (views desc, id asc), items summing to 0 left out
    proven: bool
    items_read: int  # entries the gathers returned
    counts_read: int  # counts read back
    rounds: int
    scans: int = 0  # scans of the board table that took over when the indexes could not prove the top


# gather(part, depth) -> the part's best ``depth`` visible keyed items
GatherPart = Callable[[int, int], Part]
# read({part: ids}) -> {part: {id: count}}: exact counts, 0 for an id without views in that part
ReadCounts = Callable[[Mapping[int, Sequence[str]]], Mapping[int, Mapping[str, int]]]


# carry(count) -> what a part's count adds to the sum: non-decreasing (so a part's bound stays a bound), e.g. the
# identity, or trending's previous epoch, decayed by 2^28
Carry = Callable[[int], int]


def same(count: int) -> int:
    """The carry of a part that counts as it is."""
    return count


def sum_top(
    n: int,
    parts: int,
    gather: GatherPart,
    read: ReadCounts,
    *,
    depth: int | None = None,
    carries: Sequence[Carry] | None = None,
) -> Summed:
    """The exact top ``n`` items by their counts summed over ``parts`` parts (each through its ``carries``, the
    identity by default), or ``proven=False`` (module docstring). Each part is first gathered ``depth`` deep (default
    ``n``), then twice as deep each round it must."""
    carry = list(carries) if carries is not None else [same] * parts
    depths = dict.fromkeys(range(parts), depth or n)
    gathered: dict[int, Part] = {}
    known: dict[int, dict[str, int]] = {part: {} for part in range(parts)}
    items_read = counts_read = rounds = 0
    while True:
        rounds += 1
        for part in depths:
            gathered[part] = gather(part, depths[part])
            items_read += len(gathered[part].top)
            known[part].update((entry.id, entry.views) for entry in gathered[part].top)
        bounds = [carry[part](gathered[part].bound) for part in range(parts)]
        candidates = {entry.id for part in gathered.values() for entry in part.top}
        wanted = _worth_reading(n, candidates, known, bounds, carry)
        if wanted:
            found = read(wanted)
            for part, ids in wanted.items():
                counts = found.get(part, {})
                known[part].update((item, counts.get(item, 0)) for item in ids)
                counts_read += len(ids)
        exact = [
            Entry(id=item, views=total)
            for item in candidates
            if all(item in known[part] for part in range(parts))
            and (total := sum(carry[part](known[part][item]) for part in range(parts))) > 0
        ]
        best = top(exact, n)
        unseen = sum(bounds)
        if unseen == 0 or (len(best) == n and best[-1].views > unseen):
            return Summed(best, True, items_read, counts_read, rounds)
        depths = {part: depths[part] * 2 for part in range(parts) if gathered[part].deepens}
        if not depths:
            return Summed(best, False, items_read, counts_read, rounds)


def _worth_reading(
    n: int,
    candidates: set[str],
    known: Mapping[int, Mapping[str, int]],
    bounds: Sequence[int],
    carry: Sequence[Carry],
) -> dict[int, list[str]]:
    """The missing counts of every candidate whose upper bound reaches the n-th best lower bound: the others cannot
    be in the top n, and each count read back costs a read."""
    parts = range(len(bounds))
    lower = {item: sum(carry[part](known[part].get(item, 0)) for part in parts) for item in candidates}
    upper = {item: lower[item] + sum(bounds[part] for part in parts if item not in known[part]) for item in candidates}
    floor = sorted(lower.values(), reverse=True)[n - 1] if len(lower) >= n else 0
    wanted: dict[int, list[str]] = {}
    for item in sorted(candidates):
        if upper[item] >= floor and upper[item] > 0:
            for part in parts:
                if item not in known[part]:
                    wanted.setdefault(part, []).append(item)
    return wanted
