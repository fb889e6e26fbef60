"""Which partition key values a request touches, and how many units each: tables, their GSIs and index entries.

A write charges the table's partition key value, plus for each GSI (keyed on the index's partition key value):
nothing when the item is in the index neither before nor after (a sparse index's whole point); one write when it
enters, leaves, or changes a projected attribute; two writes (a delete under the old keys and a put under the new
ones) when an index key attribute (e.g. the sort key ``views``) changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from shardboard_tools.capacity.emulator import Charge
from shardboard_tools.capacity.units import Item, item_size, write_units


@dataclass(frozen=True)
class IndexSchema:
    name: str
    hash_key: str
    range_key: str | None
    # Non-key attributes copied into the index; None = ALL.
    projected: frozenset[str] | None

    def entry(self, item: Item | None, table_keys: tuple[str, ...]) -> dict[str, Any] | None:
        """The index entry ``item`` has (keys plus projected attributes), or None when it lacks an index key."""
        if not item or self.hash_key not in item or (self.range_key and self.range_key not in item):
            return None
        if self.projected is None:
            return dict(item)
        keep = {self.hash_key, *table_keys, *self.projected}
        if self.range_key:
            keep.add(self.range_key)
        return {name: value for name, value in item.items() if name in keep}

    def keys_of(self, entry: Mapping[str, Any]) -> tuple[Any, ...]:
        return (_plain(entry[self.hash_key]), _plain(entry[self.range_key]) if self.range_key else None)


@dataclass(frozen=True)
class TableSchema:
    name: str
    hash_key: str
    range_key: str | None = None
    indexes: tuple[IndexSchema, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.hash_key, self.range_key) if self.range_key else (self.hash_key,)

    @classmethod
    def from_create_table(cls, request: Mapping[str, Any]) -> TableSchema:
        """Schema of a CreateTable request (e.g. ``Template.create_table_requests()``)."""
        hash_key, range_key = _key_schema(request["KeySchema"])
        indexes = []
        for index in request.get("GlobalSecondaryIndexes", []):
            index_hash, index_range = _key_schema(index["KeySchema"])
            projection = index.get("Projection", {})
            kind = projection.get("ProjectionType", "ALL")
            projected = (
                None
                if kind == "ALL"
                else frozenset(projection.get("NonKeyAttributes", []) if kind == "INCLUDE" else [])
            )
            indexes.append(IndexSchema(index["IndexName"], index_hash, index_range, projected))
        return cls(request["TableName"], hash_key, range_key, tuple(indexes))

    def index(self, name: str) -> IndexSchema:
        for index in self.indexes:
            if index.name == name:
                return index
        raise KeyError(f"table {self.name} has no index {name!r}")

    def resource(self, index: IndexSchema) -> str:
        return f"{self.name}/{index.name}"

    def partition_of(self, key_or_item: Mapping[str, Any]) -> str:
        return str(_plain(key_or_item[self.hash_key]))

    def write_charges(self, key: Mapping[str, Any], old: Item | None, new: Item | None) -> list[Charge]:
        """Charges of a write that turned ``old`` into ``new`` (None = absent); a refused write passes new=old."""
        charges = [
            Charge(self.name, self.name, self.partition_of(key), "write", write_units(item_size(old), item_size(new)))
        ]
        for index in self.indexes:
            charges.extend(self._index_charges(index, old, new))
        return charges

    def _index_charges(self, index: IndexSchema, old: Item | None, new: Item | None) -> list[Charge]:
        before, after = index.entry(old, self.keys), index.entry(new, self.keys)
        if before == after:
            return []
        resource = self.resource(index)

        def charge(entry: Mapping[str, Any]) -> Charge:
            return Charge(
                self.name, resource, str(_plain(entry[index.hash_key])), "write", write_units(item_size(entry))
            )

        if before is None or after is None:
            return [charge(after or before or {})]
        if index.keys_of(before) != index.keys_of(after):
            return [charge(before), charge(after)]  # delete under the old keys, put under the new ones
        return [
            Charge(
                self.name,
                resource,
                str(_plain(after[index.hash_key])),
                "write",
                write_units(item_size(before), item_size(after)),
            )
        ]


def _key_schema(elements: list[Mapping[str, str]]) -> tuple[str, str | None]:
    hash_key = next(e["AttributeName"] for e in elements if e["KeyType"] == "HASH")
    range_key = next((e["AttributeName"] for e in elements if e["KeyType"] == "RANGE"), None)
    return hash_key, range_key


def _plain(value: Mapping[str, Any]) -> Any:
    """A key attribute's scalar: numbers compare by value ("5" == "5.0"), strings and binaries as they are."""
    (kind, raw), *_ = value.items()
    return Decimal(raw).normalize() if kind == "N" else raw
