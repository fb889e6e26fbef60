"""Check the promise: every aggregate equals the sum of its base shards, and the index holds every contender."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.ranking import Entry, top
from shardboard.settings import Settings


@dataclass(frozen=True)
class Difference:
    item_id: str
    expected: int  # sum of the item's base shards (the truth)
    found: int | None  # the aggregate's views; None when there is no aggregate


@dataclass
class Report:
    items: int
    views: int
    differences: list[Difference] = field(default_factory=list)
    # Items at or above the published threshold that lack the GSI key: the snapshot could miss them.
    index_misses: list[str] = field(default_factory=list)
    threshold: int = 0
    snapshot_exact: bool | None = None  # does the stored snapshot equal the top N of the truth?

    @property
    def exact(self) -> bool:
        return not self.differences and not self.index_misses

    def as_json(self) -> dict[str, Any]:
        return {"exact": self.exact, **asdict(self)}


def verify(views: ViewStore, board: BoardStore, settings: Settings) -> Report:
    truth = views.scan_totals()
    aggregates = board.scan_aggregates()
    threshold = board.get_threshold(settings.board) if settings.sparse_index else 0
    report = Report(items=len(truth), views=sum(truth.values()), threshold=threshold)
    for item in sorted(truth.keys() | aggregates.keys()):
        expected = truth.get(item, 0)
        found = aggregates[item][0] if item in aggregates else None
        if found != expected:
            report.differences.append(Difference(item, expected, found))
        if item in aggregates and not aggregates[item][1] and aggregates[item][0] >= threshold:
            report.index_misses.append(item)
    snapshot = board.get_snapshot(settings.board)
    if snapshot is not None:
        best = top((Entry(id=i, views=v) for i, v in truth.items()), settings.top_n)
        report.snapshot_exact = snapshot["items"] == [[e.id, e.views] for e in best]
    return report
