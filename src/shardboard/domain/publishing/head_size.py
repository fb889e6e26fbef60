"""A head fits in one DynamoDB item by construction (docs/head-size.md).

Every part of a head has a size that follows from N (TopN), R (SnapshotSpare), P (PageSize), the ids' length and the
documents' (``head_size_bound``): the entries, the lists aligned with them (previous and day-before ranks, a trending
head's recent views), the ids that left the top N (at most N) and the first P entries' documents. A head about to be
written is measured as stored (``head_bytes``) and, past ``HEAD_BUDGET_BYTES``, degraded in this order until it fits
(``fit``): inline documents (lowest-ranked first), spares (lowest first), the ``left`` record of the ids that left the
top N (lowest-ranked first), then the top N's own lowest entries. The write never fails for size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from shardboard.domain.publishing.head import Head, stored_attributes

# DynamoDB's item limit: 400 KB, attribute names included.
ITEM_LIMIT_BYTES = 400 * 1024
# What a head may take: the limit less room for what ``head_bytes`` does not see exactly (the key's prefix, how
# DynamoDB sizes numbers); ``head_bytes`` counts every number as its digits, more than DynamoDB does.
HEAD_BUDGET_BYTES = 400_000
# The key and the attributes whose size does not grow with N: names, period, digest, shard hits, a ranked version's
# fixed fields, a takedown patch's few changes. Measured well under this for 200 board shards and 20 retired versions.
FIXED_BYTES = 6_000
# Digits of the largest stored value of an entry: a count (a 64-bit integer), a trending score (DynamoDB's 38 digits).
COUNT_DIGITS = 19
SCORE_DIGITS = 38
# A document as stored inline: at most 2 KB of compact JSON (domain/items/records.py MAX_META_BYTES).
DOCUMENT_BYTES = 2048


@dataclass(frozen=True)
class Degraded:
    """What ``fit`` left out of a head to keep it within the budget (all 0: nothing)."""

    documents: int = 0
    spares: int = 0
    gone: int = 0
    entries: int = 0

    def __bool__(self) -> bool:
        return any((self.documents, self.spares, self.gone, self.entries))


def head_bytes(head: Head) -> int:
    """The head's size as DynamoDB counts it, from above: every attribute's name and value, the key included."""
    key = len("pk") + len(f"snapshot#{head.board}#{head.period.get('kind', 'all')}#{head.bucket}".encode())
    return key + sum(
        len(name) + (len(value.encode()) if isinstance(value, str) else len(str(value)))
        for name, value in stored_attributes(head).items()
    )


def fit(head: Head, budget: int = HEAD_BUDGET_BYTES) -> tuple[Head, Degraded]:
    """``head`` within ``budget`` bytes, and what it left out: documents, then spares, then ``gone``, then the top
    N's lowest entries, each part cut from its lowest-ranked end only as far as needed (a binary search on how many
    to keep: the size only grows with it)."""
    if head_bytes(head) <= budget:
        return head, Degraded()
    meta = dict(head.meta or {})
    documents = [item for item, document in meta.items() if document is not None]

    def with_documents(keep: int) -> Head:
        if head.meta is None:
            return head
        kept = set(documents[:keep])
        return replace(head, meta={item: doc for item, doc in meta.items() if doc is None or item in kept})

    keep = _most(len(documents), lambda n: head_bytes(with_documents(n)) <= budget)
    fitted = with_documents(keep)
    left = Degraded(documents=len(documents) - keep)
    if keep > 0 or head_bytes(fitted) <= budget:
        return fitted, left
    spare = fitted.spare
    keep = _most(len(spare), lambda n: head_bytes(replace(fitted, spare=spare[:n])) <= budget)
    fitted, left = replace(fitted, spare=spare[:keep]), replace(left, spares=len(spare) - keep)
    if keep > 0 or head_bytes(fitted) <= budget:
        return fitted, left
    gone = sorted(fitted.gone.items(), key=lambda pair: (pair[1], pair[0]))
    keep = _most(len(gone), lambda n: head_bytes(replace(fitted, gone=dict(gone[:n]))) <= budget)
    fitted, left = replace(fitted, gone=dict(gone[:keep])), replace(left, gone=len(gone) - keep)
    if keep > 0 or head_bytes(fitted) <= budget:
        return fitted, left
    items = fitted.items
    keep = _most(len(items), lambda n: head_bytes(replace(fitted, items=items[:n])) <= budget)
    return replace(fitted, items=items[:keep]), replace(left, entries=len(items) - keep)


def _most(count: int, fits: Callable[[int], bool]) -> int:
    """The largest n in [0, count] with ``fits(n)`` (0 when none; once false, ``fits`` stays false as n grows)."""
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class HeadShape:
    """What a head's size follows from: N, R, P, the ids' stored length (UTF-8 bytes, JSON-escaped), the documents'
    (compact JSON; 0: none inline), whether it is a trending head and D (a ranked version's depth, 0: none)."""

    top_n: int
    spare: int
    page_size: int
    id_bytes: int
    document_bytes: int = 0
    trending: bool = False
    rank_depth: int = 0


def head_size_bound(shape: HeadShape) -> int:
    """The most bytes a head of ``shape`` takes, every part at its largest (docs/head-size.md, "The formula")::

        (N + R) x (id + v + 6)        entries: ["id",views],
      + 2 (N + R) x (r + 1)           previous and day-before ranks, aligned: rank or null,
      + N x (id + r + 4)              the ids that left the top N: "id":rank,
      + min(P, N) x (id + doc + 4)    inline documents: "id":{...},
      + N x (2 c + 4)                 trending only, recent views aligned: [hour,day],
      + ceil(D / P) x (4 v + 5)       a ranked version's pages: [start,first,last,tie],
      + FIXED_BYTES

    with c = 19 the digits of a count, v the digits of an entry's views (c, or 38 for a trending score),
    r = max(4, digits of N + R).
    """
    n, entries = shape.top_n, shape.top_n + shape.spare
    views = SCORE_DIGITS if shape.trending else COUNT_DIGITS
    rank = max(4, len(str(entries)))
    size = entries * (shape.id_bytes + views + 6) + 2 * entries * (rank + 1) + n * (shape.id_bytes + rank + 4)
    if shape.document_bytes:
        size += min(shape.page_size, n) * (shape.id_bytes + shape.document_bytes + 4)
    if shape.trending:
        size += n * (2 * COUNT_DIGITS + 4)
    if shape.rank_depth > n:
        size += math.ceil(shape.rank_depth / shape.page_size) * (4 * views + 5)
    return size + FIXED_BYTES


def largest_top_n(shape: HeadShape, budget: int = HEAD_BUDGET_BYTES) -> int:
    """The largest N whose head of ``shape`` (its other fields as given) fits ``budget`` whole: no document, spare,
    ``left`` record or entry left out (0: not even one entry)."""
    return _most(100_000, lambda n: head_size_bound(replace(shape, top_n=n)) <= budget)
