"""The board (leaderboard) table: aggregates, past entries, the sharded period GSIs, period items and snapshots.

An aggregate (one per board and item) holds all-time ``views``, ``n_<kind>`` (the current period of each kind),
the anchor ``bucket`` and ``applied_<k>``, the last base value applied per write shard of that bucket. It joins a
kind's GSI (hash ``g_<kind>``, range ``v_<kind>``: the bucket of its count; for all time ``dk`` and ``db``, the
bucket of ``views``) when it can reach that period's top N. Past entries carry one period's count in the same
attributes. docs/boards-and-periods.md, docs/coarse-index.md.

Items a release before the coarse index wrote hold the count itself in ``v_<kind>`` and no ``fmt``: they are read
in either shape, and every write that adds to a count or sets a bucket is conditioned on ``fmt``, so such an item is
converted (``convert``) before it is written. Their all-time key is ``board_shard`` (GSI ``by-views``, sorted by the
views): the gather reads it too, and an all-time join moves the item off it (``shardboard migrate`` converts and
moves the rest).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import (
    CONDITION_FAILED,
    THROTTLING_CODES,
    Item,
    error_code,
    int_of,
    n_attr,
    parallel_scan,
    s_attr,
)
from shardboard.adapters.keys import (
    APPLIED_PREFIX,
    BOARD,
    BOARD_SHARD,
    BOARD_SHARDS_ATTR,
    BUCKET,
    BY_CHANGE_INDEX,
    BY_VIEWS_INDEX,
    CHANGED,
    CHANGED_AT,
    CHANGES,
    CLEAN_BOARD,
    COARSE_FORMAT,
    DEEP_BUCKET,
    DEEP_KEY,
    DEEP_THRESHOLD,
    DIRTY,
    DIRTY_SINCE,
    EXPIRES_AT,
    FAILING_SINCE,
    FAILURES,
    FORMAT,
    ITEM_ID,
    PERIOD_BUCKET_PREFIX,
    PERIOD_COUNT_PREFIX,
    PERIOD_KEY_PREFIX,
    PERIOD_KIND,
    PK,
    PREVIOUS_BOARD_SHARDS_ATTR,
    RANK_ENTRIES,
    RANKS,
    REFRESHED_AT,
    SOURCE_VIEWS,
    VIEWS,
    aggregate_pk,
    applied_attr,
    bucket_attr,
    count_attr,
    entry_pk,
    index_key_attr,
    index_name,
    rank_page_pk,
    rank_shard_pk,
    ranks_checkpoint_pk,
    snapshot_pk,
    threshold_pk,
)
from shardboard.domain.aggregating.batch import ShardMove, views_added
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.periods import ALL, kind_of
from shardboard.domain.ports import (
    AggregateState,
    BoardState,
    IndexRow,
    LateMove,
    LateResult,
    MoveResult,
    PastEntry,
    PeriodKey,
    PeriodStatus,
    RankParts,
    RankShard,
    ResumeToken,
)
from shardboard.domain.publishing.deep_tier import deep_bucket, index_bucket
from shardboard.domain.publishing.head import Head, Row, ShardRow, head_from_stored, rows, stored_attributes

# A write refused by a legacy item converts it and tries again; only a concurrent writer of the previous release
# (during its deploy) can change it between the two.
CONVERT_ATTEMPTS = 4


def applied_values(item: Mapping[str, Any]) -> dict[int, int]:
    """The per-write-shard applied values stored on an aggregate or an anchor entry."""
    return {
        int(name[len(APPLIED_PREFIX) :]): int(value["N"])
        for name, value in item.items()
        if name.startswith(APPLIED_PREFIX)
    }


def is_legacy(item: Mapping[str, Any]) -> bool:
    """Written by a release before the coarse index: its ``v_<kind>`` hold counts."""
    return FORMAT not in item and any(name.startswith(PERIOD_BUCKET_PREFIX) for name in item)


def _by_kind(item: Mapping[str, Any], prefix: str) -> dict[str, int]:
    return {name[len(prefix) :]: int_of(value) for name, value in item.items() if name.startswith(prefix)}


def aggregate_state(item: Mapping[str, Any] | None) -> AggregateState:
    """An aggregate's state from its stored item, in either shape (empty when there is none)."""
    item = item or {}
    if is_legacy(item):
        counts = _by_kind(item, PERIOD_BUCKET_PREFIX)
        buckets = dict(counts)  # the count itself sorts it: never below its bucket, so nothing to raise
    else:
        counts, buckets = _by_kind(item, PERIOD_COUNT_PREFIX), _by_kind(item, PERIOD_BUCKET_PREFIX)
    keyed = frozenset(name[len(PERIOD_KEY_PREFIX) :] for name in item if name.startswith(PERIOD_KEY_PREFIX))
    if DEEP_KEY in item:
        keyed |= {ALL}
    if DEEP_BUCKET in item:
        buckets[ALL] = int_of(item[DEEP_BUCKET])
    bucket = item.get(BUCKET)
    return AggregateState(
        applied_values(item), int_of(item.get(VIEWS)), bucket["S"] if bucket else None, counts, keyed, buckets
    )


def _leaving_views_index(keys: Mapping[str, str], names: dict[str, str]) -> str:
    """The REMOVE clause of a write that keys an item into all time's index: off the one of the releases before
    (``board_shard``), if it was there; empty when the write keys no all time."""
    if ALL not in keys:
        return ""
    names["#views_index"] = BOARD_SHARD
    return " REMOVE #views_index"


def _item_id(item: Mapping[str, Any]) -> str:
    """A row's item id: all time's index projects keys only, so it is read off the aggregate key (board names hold
    no '#', so the id is everything after the second one)."""
    return str(item[ITEM_ID]["S"]) if ITEM_ID in item else str(item[PK]["S"]).split("#", 2)[2]


def entry_state(item: Mapping[str, Any] | None, kind: str) -> AggregateState:
    """A past entry's state: its count is its kind's count (``views`` reads the same number)."""
    state = aggregate_state(item)
    return AggregateState(state.applied, state.count(kind), state.bucket, state.counts, state.keyed, state.buckets)


def stored_count(item: Mapping[str, Any], kind: str) -> int:
    """The ``kind`` count an aggregate or a past entry holds, in either shape."""
    return aggregate_state(item).count(kind)


def converted(item: Mapping[str, Any]) -> tuple[list[str], str, dict[str, str], dict[str, Any]]:
    """The update that converts a legacy item in place (each ``v_<kind>`` count to ``n_<kind>``, its bucket to
    ``v_<kind>``), conditioned on those counts unchanged: SET clauses, condition, names, values."""
    sets, conditions = ["#fmt = :fmt"], ["attribute_not_exists(#fmt)"]
    names, values = {"#fmt": FORMAT}, {":fmt": n_attr(COARSE_FORMAT)}
    for position, (kind, count) in enumerate(sorted(_by_kind(item, PERIOD_BUCKET_PREFIX).items())):
        names[f"#n{position}"], names[f"#v{position}"] = count_attr(kind), bucket_attr(kind)
        values[f":n{position}"], values[f":b{position}"] = n_attr(count), n_attr(deep_bucket(count))
        sets += [f"#n{position} = :n{position}", f"#v{position} = :b{position}"]
        conditions.append(f"#v{position} = :n{position}")
    return sets, " AND ".join(conditions), names, values


def board_state_from_item(item: Mapping[str, Any] | None) -> BoardState:
    item = item or {}
    shards, previous = item.get(BOARD_SHARDS_ATTR), item.get(PREVIOUS_BOARD_SHARDS_ATTR)
    return BoardState(
        int_of(item.get("threshold")),
        int_of(shards) if shards else None,
        int_of(previous) if previous else None,
        int_of(item.get(DEEP_THRESHOLD)),
        int_of(item.get(CHANGES)),
        refreshed_at=int_of(item.get(REFRESHED_AT)),
        dirty_since=int_of(item.get(DIRTY_SINCE)) if item.get(CHANGED, {}).get("S") == DIRTY else 0,
        failures=int_of(item.get(FAILURES)),
        failing_since=int_of(item.get(FAILING_SINCE)),
    )


def period_status(item: Mapping[str, Any]) -> PeriodStatus:
    kind = item[PERIOD_KIND]["S"] if PERIOD_KIND in item else ALL
    return PeriodStatus(
        PeriodKey(item[BOARD]["S"], kind, item[BUCKET]["S"] if BUCKET in item else ALL),
        int_of(item.get("threshold")),
        int_of(item.get(CHANGED_AT)),
        int_of(item.get(REFRESHED_AT)),
        int_of(item.get(CHANGES)),
    )


def move_expression(moves: Sequence[ShardMove]) -> tuple[list[str], list[str], dict[str, str], dict[str, Any]]:
    """SET clauses and conditions that advance ``applied_k`` from each move's expected value to its target."""
    sets, conditions, names, values = [], [], {}, {}
    for m in moves:
        names[f"#a{m.shard}"] = applied_attr(m.shard)
        values[f":t{m.shard}"] = n_attr(m.target)
        sets.append(f"#a{m.shard} = :t{m.shard}")
        if m.expected == 0:
            conditions.append(f"attribute_not_exists(#a{m.shard})")
        else:
            values[f":e{m.shard}"] = n_attr(m.expected)
            conditions.append(f"#a{m.shard} = :e{m.shard}")
    return sets, conditions, names, values


class BoardStore:
    """The leaderboard table: aggregates, the sharded ``by-views`` GSI, snapshot and threshold items."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    # -- aggregates
    def move(
        self,
        board: str,
        item_id: str,
        bucket: str,
        moves: Sequence[ShardMove],
        *,
        kinds: Sequence[str],
        joins: Mapping[str, str],
        weights: Mapping[str, int] | None = None,
        buckets: Mapping[str, int] | None = None,
    ) -> MoveResult:
        """Advance ``applied_k`` from expected to target for each move and add the difference to all-time views and
        to each kind's current count, in one UpdateItem conditioned on the anchor bucket and every expected value
        (0 = never applied), so it happens at most once. ``joins`` puts the aggregate into indexes in the same write
        (with ``buckets``, the bucket of each joined kind if it has none: a higher one is a separate ``join_index``);
        a kind in ``weights`` adds the difference times its weight.
        """
        sets, conditions, names, values = move_expression(moves)
        names |= {"#views": VIEWS, "#item": ITEM_ID, "#board": BOARD, "#bucket": BUCKET, "#fmt": FORMAT, "#pk": PK}
        delta = views_added(moves)
        values |= {
            ":delta": n_attr(delta),
            ":item": s_attr(item_id),
            ":board": s_attr(board),
            ":bucket": s_attr(bucket),
            ":fmt": n_attr(COARSE_FORMAT),
        }
        adds = ["#views :delta"]
        for kind in kinds:
            names[f"#n_{kind}"] = count_attr(kind)
            if weights and kind in weights:
                values[f":d_{kind}"] = n_attr(delta * weights[kind])
                adds.append(f"#n_{kind} :d_{kind}")
            else:
                adds.append(f"#n_{kind} :delta")
        sets += ["#item = :item", "#board = :board", "#bucket = :bucket", "#fmt = :fmt"]
        for kind, key in joins.items():
            # An aggregate already in an index keeps its key: only `reshard` (and a period's end) moves it.
            names[f"#g_{kind}"], values[f":g_{kind}"] = index_key_attr(kind), s_attr(key)
            sets.append(f"#g_{kind} = if_not_exists(#g_{kind}, :g_{kind})")
            if buckets and kind in buckets:
                names[f"#b_{kind}"], values[f":b_{kind}"] = bucket_attr(kind), n_attr(buckets[kind])
                sets.append(f"#b_{kind} = if_not_exists(#b_{kind}, :b_{kind})")
        update = f"ADD {', '.join(adds)} SET {', '.join(sets)}{_leaving_views_index(joins, names)}"
        conditions.insert(0, "(attribute_not_exists(#bucket) OR #bucket = :bucket)")
        conditions.insert(1, "(attribute_not_exists(#pk) OR #fmt = :fmt)")
        pk = aggregate_pk(board, item_id)
        for _ in range(CONVERT_ATTEMPTS):
            try:
                response = self.client.update_item(
                    TableName=self.table,
                    Key={PK: s_attr(pk)},
                    UpdateExpression=update,
                    ConditionExpression=" AND ".join(conditions),
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as error:
                if error_code(error) != CONDITION_FAILED:
                    raise
                old = cast(Item | None, error.response.get("Item"))
                if old is not None and FORMAT not in old:
                    self.convert(pk, old)
                    continue
                return MoveResult(applied=False, state=aggregate_state(old) if old is not None else None)
            return MoveResult(applied=True, state=aggregate_state(response["Attributes"]))
        return MoveResult(applied=False, state=None)

    def convert(self, pk: str, item: Mapping[str, Any]) -> bool:
        """Convert an item a release before wrote (no ``fmt``) in place (``converted``: with no period count, it only
        gets ``fmt``); False if it changed since ``item`` was read (the caller reads it again) or is converted
        already."""
        sets, condition, names, values = converted(item)
        return self._conditional_update(pk, f"SET {', '.join(sets)}", condition, names, values)

    def _converting(self, pk: str) -> bool:
        """After a write refused by its ``fmt`` condition: convert the item if it is a legacy one (True: try again)."""
        item = self._get(pk, consistent=True)
        if item is None or FORMAT in item:
            return False
        self.convert(pk, item)
        return True

    def migrate(self, segments: int = 4) -> int:
        """Convert every legacy aggregate and past entry and move every aggregate off ``by-views`` (`shardboard
        migrate`): a parallel scan, then a conditional update or two each; items changed meanwhile are read and done
        again. Returns how many items it changed; a second run changes none."""
        done = 0
        for part in parallel_scan(self.client, self.table, segments, None, None, None):
            for item in part:
                if ITEM_ID not in item:  # not a count: a period item, a snapshot, a ranked version
                    continue
                pk = item[PK]["S"]
                current: Mapping[str, Any] | None = item
                changed = False
                for _ in range(2 * CONVERT_ATTEMPTS):
                    if current is None or (FORMAT in current and BOARD_SHARD not in current):
                        break
                    if FORMAT not in current:
                        changed |= self.convert(pk, current)
                    else:
                        changed |= self.leave_views_index(pk, current)
                    current = self._get(pk, consistent=True)
                done += changed
        return done

    def leave_views_index(self, pk: str, item: Mapping[str, Any]) -> bool:
        """Move an aggregate a release before keyed in ``by-views`` to all time's bucketed index: ``dk`` takes its
        key (unless it has one), ``db`` the bucket of its views (unless it holds a higher one), ``board_shard`` goes;
        conditioned on the views read, so the bucket is never below the count's. False if it changed meanwhile."""
        views = int_of(item.get(VIEWS))
        names = {"#dk": DEEP_KEY, "#db": DEEP_BUCKET, "#bs": BOARD_SHARD, "#views": VIEWS}
        values = {":bs": item[BOARD_SHARD], ":views": n_attr(views), ":db": n_attr(deep_bucket(views))}
        return self._conditional_update(
            pk,
            "SET #dk = if_not_exists(#dk, :bs), #db = :db REMOVE #bs",
            "#bs = :bs AND #views = :views AND (attribute_not_exists(#db) OR #db <= :db)",
            names,
            values,
        )

    def state(self, board: str, item_id: str) -> AggregateState:
        """An aggregate's state, strongly consistent (empty when it does not exist yet)."""
        return aggregate_state(self._get(aggregate_pk(board, item_id), consistent=True))

    def roll(
        self, board: str, item_id: str, old: AggregateState, new: AggregateState, keys: Mapping[str, str | None]
    ) -> bool:
        """Replace the aggregate's anchor bucket, applied values and counts, if it is still exactly ``old``."""
        names = {"#bucket": BUCKET, "#views": VIEWS, "#fmt": FORMAT}
        values: dict[str, Any] = {
            ":old_bucket": s_attr(old.bucket or ""),
            ":old_views": n_attr(old.views),
            ":bucket": s_attr(new.bucket or ""),
            ":views": n_attr(new.views),
            ":fmt": n_attr(COARSE_FORMAT),
        }
        # Every count and bucket is set: a legacy aggregate leaves its roll converted.
        sets = ["#bucket = :bucket", "#views = :views", "#fmt = :fmt"]
        removes = []
        for shard in sorted(set(old.applied) | set(new.applied)):
            names[f"#a{shard}"] = applied_attr(shard)
            if shard in new.applied:
                values[f":a{shard}"] = n_attr(new.applied[shard])
                sets.append(f"#a{shard} = :a{shard}")
            else:
                removes.append(f"#a{shard}")
        for kind, count in new.counts.items():
            names[f"#n_{kind}"], values[f":n_{kind}"] = count_attr(kind), n_attr(count)
            names[f"#b_{kind}"], values[f":b_{kind}"] = (
                bucket_attr(kind),
                n_attr(new.buckets.get(kind, index_bucket(count))),
            )
            sets += [f"#n_{kind} = :n_{kind}", f"#b_{kind} = :b_{kind}"]
        for kind, key in keys.items():
            names[f"#g_{kind}"] = index_key_attr(kind)
            if key is None:
                removes.append(f"#g_{kind}")
            else:
                values[f":g_{kind}"] = s_attr(key)
                sets.append(f"#g_{kind} = :g_{kind}")
        update = f"SET {', '.join(sets)}" + (f" REMOVE {', '.join(removes)}" if removes else "")
        return self._conditional_update(
            aggregate_pk(board, item_id), update, "#bucket = :old_bucket AND #views = :old_views", names, values
        )

    def archive(self, entry: PastEntry) -> None:
        """Put a past period's entry unless one copied from a later aggregate state is stored already."""
        period = entry.period
        item: Item = {
            PK: s_attr(entry_pk(period.board, period.kind, period.bucket, entry.item_id)),
            ITEM_ID: s_attr(entry.item_id),
            BOARD: s_attr(period.board),
            PERIOD_KIND: s_attr(period.kind),
            BUCKET: s_attr(period.bucket),
            count_attr(period.kind): n_attr(entry.count),
            bucket_attr(period.kind): n_attr(deep_bucket(entry.count)),
            FORMAT: n_attr(COARSE_FORMAT),
            SOURCE_VIEWS: n_attr(entry.source_views),
        }
        if entry.index_key is not None:
            item[index_key_attr(period.kind)] = s_attr(entry.index_key)
        if entry.expires_at is not None:
            item[EXPIRES_AT] = n_attr(entry.expires_at)
        for shard, value in (entry.applied or {}).items():
            item[applied_attr(shard)] = n_attr(value)
        try:
            self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk) OR #source < :source",
                ExpressionAttributeNames={"#pk": PK, "#source": SOURCE_VIEWS},
                ExpressionAttributeValues={":source": n_attr(entry.source_views)},
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise

    def move_late(self, late: LateMove) -> LateResult:
        """One TransactWriteItems: the entry's compare-and-set, the aggregate (conditioned on its anchor bucket) and
        the past entries. All or nothing, so the views count once in every period."""
        for _ in range(CONVERT_ATTEMPTS):
            result = self._move_late(late)
            if result is not None:
                return result
        return LateResult(applied=False, aggregate_moved=True)

    def _move_late(self, late: LateMove) -> LateResult | None:
        """One attempt; None when it converted a legacy item that refused it (try again)."""
        delta = views_added(late.moves)
        entry = PeriodKey(late.board, late.anchor_kind, late.bucket)
        sets, conditions, names, values = move_expression(late.moves)
        aggregate_key = aggregate_pk(late.board, late.item_id)
        keys = [entry_pk(*entry, late.item_id), aggregate_key, *(entry_pk(*p, late.item_id) for p in late.past)]
        transact = [
            {"Update": self._entry_update(entry, late, delta, moved=(sets, names, values, " AND ".join(conditions)))},
            {
                "Update": {
                    "TableName": self.table,
                    "Key": {PK: s_attr(aggregate_key)},
                    "UpdateExpression": "ADD "
                    + ", ".join(["#views :delta", *(f"#n_{kind} :d_{kind}" for kind in late.aggregate_kinds)]),
                    "ConditionExpression": "#bucket = :bucket AND #fmt = :fmt",
                    "ExpressionAttributeNames": {
                        "#views": VIEWS,
                        "#bucket": BUCKET,
                        "#fmt": FORMAT,
                        **{f"#n_{kind}": count_attr(kind) for kind in late.aggregate_kinds},
                    },
                    "ExpressionAttributeValues": {
                        ":delta": n_attr(delta),
                        ":bucket": s_attr(late.aggregate_bucket),
                        ":fmt": n_attr(COARSE_FORMAT),
                        **{f":d_{kind}": n_attr(late.added(kind, delta)) for kind in late.aggregate_kinds},
                    },
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            *({"Update": self._entry_update(period, late, delta)} for period in late.past),
        ]
        try:
            self.client.transact_write_items(TransactItems=transact)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = error.response.get("CancellationReasons") or []
            codes = [reason.get("Code") for reason in reasons]
            legacy = [
                (pk, reason["Item"])
                for pk, reason in zip(keys, reasons, strict=False)
                if reason.get("Code") == "ConditionalCheckFailed"
                and reason.get("Item")
                and FORMAT not in reason["Item"]
            ]
            if legacy:
                for pk, item in legacy:
                    self.convert(pk, item)
                return None
            if codes and codes[0] == "ConditionalCheckFailed":
                old = reasons[0].get("Item")
                return LateResult(applied=False, entry=entry_state(old, late.anchor_kind) if old else None)
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                return LateResult(applied=False, aggregate_moved=True)
            if any(code in THROTTLING_CODES or code == "TransactionConflict" for code in codes):
                raise  # Lambda retries the item's records; the compare-and-set keeps that exact
            raise
        return LateResult(applied=True)

    def _entry_update(
        self,
        period: PeriodKey,
        late: LateMove,
        delta: int,
        moved: tuple[list[str], dict[str, str], dict[str, Any], str] | None = None,
    ) -> dict[str, Any]:
        """One entry's part of a late move; ``moved`` (the compare-and-set on applied values) only for the anchor's.
        Every entry's part is conditioned on its shape, so a legacy entry refuses it (and is converted)."""
        sets, names, values, condition = moved or ([], {}, {}, None)
        names = {**names, "#count": count_attr(period.kind), "#item": ITEM_ID, "#board": BOARD}
        names |= {"#kind": PERIOD_KIND, "#bucket": BUCKET, "#fmt": FORMAT, "#pk": PK}
        values = {
            **values,
            ":delta": n_attr(late.added(period.kind, delta)),
            ":item": s_attr(late.item_id),
            ":board": s_attr(period.board),
            ":kind": s_attr(period.kind),
            ":bucket": s_attr(period.bucket),
            ":fmt": n_attr(COARSE_FORMAT),
        }
        sets = [*sets, "#item = :item", "#board = :board", "#kind = :kind", "#bucket = :bucket", "#fmt = :fmt"]
        expires = late.expires_at.get(period)
        if expires is not None:
            names["#expires"], values[":expires"] = EXPIRES_AT, n_attr(expires)
            sets.append("#expires = :expires")
        key = late.joins.get(period)
        if key is not None:
            names["#g"], values[":g"] = index_key_attr(period.kind), s_attr(key)
            sets.append("#g = if_not_exists(#g, :g)")
            names["#b"], values[":b"] = bucket_attr(period.kind), n_attr(late.join_buckets.get(period, 0))
            sets.append("#b = if_not_exists(#b, :b)")
        shape = "(attribute_not_exists(#pk) OR #fmt = :fmt)"
        return {
            "TableName": self.table,
            "Key": {PK: s_attr(entry_pk(period.board, period.kind, period.bucket, late.item_id))},
            "UpdateExpression": f"ADD #count :delta SET {', '.join(sets)}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ConditionExpression": f"{shape} AND {condition}" if condition else shape,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def add_history(self, board: str, item_id: str, seen: AggregateState, adds: Mapping[str, int]) -> bool:
        names = {"#bucket": BUCKET, "#views": VIEWS, "#fmt": FORMAT}
        values = {":bucket": s_attr(seen.bucket or ""), ":views": n_attr(seen.views), ":fmt": n_attr(COARSE_FORMAT)}
        terms = []
        for position, (kind, count) in enumerate(sorted(adds.items())):
            names[f"#a{position}"] = count_attr(kind)
            values[f":a{position}"] = n_attr(count)
            terms.append(f"#a{position} :a{position}")
        return self._shaped_update(
            aggregate_pk(board, item_id),
            f"ADD {', '.join(terms)}",
            "#bucket = :bucket AND #views = :views AND #fmt = :fmt",
            names,
            values,
        )

    def entry_state(self, period: PeriodKey, item_id: str) -> AggregateState:
        item = self._get(entry_pk(period.board, period.kind, period.bucket, item_id), consistent=True)
        return entry_state(item, period.kind)

    def join_index(
        self, board: str, item_id: str, keys: Mapping[str, str], buckets: Mapping[str, int] | None = None
    ) -> bool:
        """Give an existing aggregate the GSI keys of several kinds and the buckets of their counts in one write
        (sparse index: its counts reached their thresholds; one write, not one per kind, when it crosses all time,
        week and month together).

        Like ``move``'s if_not_exists, an item in an index keeps its key (during a reshard, possibly the other
        layout's), since only `reshard` moves items. A bucket is set only where the item is not keyed yet or holds a
        lower one (a stale writer never moves it back): False when that does not hold, or there is no aggregate, or
        it is keyed in every one of ``keys`` already and there is no bucket to set.
        """
        buckets = buckets or {}
        names, values, sets, absent = {"#pk": PK, "#fmt": FORMAT}, {":fmt": n_attr(COARSE_FORMAT)}, [], []
        rising = []
        for n, (kind, key) in enumerate(sorted(keys.items())):
            names[f"#k{n}"], values[f":k{n}"] = index_key_attr(kind), s_attr(key)
            sets.append(f"#k{n} = if_not_exists(#k{n}, :k{n})")
            absent.append(f"attribute_not_exists(#k{n})")
            if kind in buckets:
                names[f"#b{n}"], values[f":b{n}"] = bucket_attr(kind), n_attr(buckets[kind])
                sets.append(f"#b{n} = :b{n}")
                rising.append(f"(attribute_not_exists(#k{n}) OR attribute_not_exists(#b{n}) OR #b{n} < :b{n})")
        condition = f"attribute_exists(#pk) AND #fmt = :fmt AND ({' OR '.join(absent)})"
        if rising:
            condition = f"attribute_exists(#pk) AND #fmt = :fmt AND {' AND '.join(rising)}"
        update = f"SET {', '.join(sets)}{_leaving_views_index(keys, names)}"
        return self._shaped_update(aggregate_pk(board, item_id), update, condition, names, values)

    def join_entry(self, period: PeriodKey, item_id: str, board_shard: str, bucket: int | None = None) -> bool:
        names = {"#bs": index_key_attr(period.kind), "#pk": PK, "#fmt": FORMAT}
        values = {":bs": s_attr(board_shard), ":fmt": n_attr(COARSE_FORMAT)}
        if bucket is None:
            update, condition = "SET #bs = :bs", "attribute_exists(#pk) AND #fmt = :fmt AND attribute_not_exists(#bs)"
        else:
            names["#b"], values[":b"] = bucket_attr(period.kind), n_attr(bucket)
            update = "SET #bs = if_not_exists(#bs, :bs), #b = :b"
            condition = (
                "attribute_exists(#pk) AND #fmt = :fmt AND (attribute_not_exists(#bs) OR attribute_not_exists(#b) "
                "OR #b < :b)"
            )
        return self._shaped_update(
            entry_pk(period.board, period.kind, period.bucket, item_id), update, condition, names, values
        )

    def _get(self, pk: str, consistent: bool) -> Item | None:
        response = self.client.get_item(TableName=self.table, Key={PK: s_attr(pk)}, ConsistentRead=consistent)
        return cast(Item | None, response.get("Item"))

    def erase(self, board: str, item_id: str, periods: Sequence[PeriodKey]) -> int:
        """One BatchGetItem (keys only) finds the entries that exist; BatchWriteItem deletes them, then DeleteItem the
        aggregate (their GSI entries go with them)."""
        names = [
            entry_pk(p.board, p.kind, p.bucket, item_id)
            for p in periods
            if p.board == board and kind_of(p.kind).pick(all_time=False, period=True)
        ]
        found = [item[PK]["S"] for item in self._batch_get(names, keys_only=True)]
        self._batch_write([{"DeleteRequest": {"Key": {PK: s_attr(pk)}}} for pk in found])
        response = self.client.delete_item(
            TableName=self.table, Key={PK: s_attr(aggregate_pk(board, item_id))}, ReturnValues="ALL_OLD"
        )
        return len(found) + ("Attributes" in response)

    def delete_aggregate(self, item_id: str, board: str = GLOBAL_BOARD) -> None:
        """Remove one aggregate (chaos runs and tests use it to lose the board table; `rebuild` restores it)."""
        self.client.delete_item(TableName=self.table, Key={PK: s_attr(aggregate_pk(board, item_id))})

    def states(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], AggregateState]:
        """Several aggregates: BatchGetItem (eventually consistent), 100 keys a request."""
        by_pk = {aggregate_pk(board, item_id): (board, item_id) for board, item_id in keys}
        return {by_pk[item[PK]["S"]]: aggregate_state(item) for item in self._batch_get(list(by_pk))}

    def aggregate_views(self, item_id: str, board: str = GLOBAL_BOARD) -> int | None:
        item = self._get(aggregate_pk(board, item_id), consistent=False)
        return None if item is None else int_of(item.get(VIEWS))

    def scan_counts(self, segments: int = 4, deadline: float | None = None) -> list[Item]:
        """Every aggregate and past entry (for `verify` and the refill): a parallel scan of the table, which raises
        ScanDeadline when still reading at ``deadline`` (``time.monotonic()``)."""
        found: list[Item] = []
        for part in parallel_scan(self.client, self.table, segments, None, None, deadline):
            found.extend(item for item in part if ITEM_ID in item)
        return found

    def scan_aggregates(self, board: str = GLOBAL_BOARD, segments: int = 4) -> dict[str, tuple[int, bool]]:
        """Every aggregate of one board: item id -> (all-time views, carries the all-time GSI key)."""
        return {
            item[ITEM_ID]["S"]: (int_of(item.get(VIEWS)), DEEP_KEY in item)
            for item in self.scan_counts(segments)
            if item[PK]["S"] == aggregate_pk(board, item[ITEM_ID]["S"])
        }

    # -- the GSIs
    def query_shard(
        self, kind: str, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], Item | None]:
        """Best ``limit`` rows of one board shard of a kind's index, resuming after ``start``."""
        index = (index_name(kind), index_key_attr(kind), bucket_attr(kind))
        return self._query_index(index, board_shard, limit, start)

    def read_counts(self, kind: str, refs: Sequence[str]) -> dict[str, int]:
        """The ``kind`` counts of the stored items ``refs`` names: BatchGetItem (eventually consistent)."""
        return {item[PK]["S"]: stored_count(item, kind) for item in self._batch_get(list(refs))}

    def query_views_index(
        self, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], Item | None]:
        """Best ``limit`` rows of one shard of ``by-views``, all time's index of the releases before (views
        projected: ``sort`` is the views)."""
        return self._query_index((BY_VIEWS_INDEX, BOARD_SHARD, VIEWS), board_shard, limit, start)

    def _query_index(
        self, index: tuple[str, str, str], key: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], Item | None]:
        """One page of one GSI partition (``index``: its name, hash key and range key attributes), best range key
        first, resuming after ``start``."""
        name, key_attr, sort_attr = index
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": name,
            "KeyConditionExpression": "#k = :k",
            "ExpressionAttributeNames": {"#k": key_attr},
            "ExpressionAttributeValues": {":k": s_attr(key)},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start:
            kwargs["ExclusiveStartKey"] = dict(start)
        response = self.client.query(**kwargs)
        rows = [IndexRow(_item_id(item), int_of(item.get(sort_attr)), item[PK]["S"]) for item in response["Items"]]
        return rows, response.get("LastEvaluatedKey")

    # -- snapshots and period items
    def get_snapshot(self, period: PeriodKey | str, consistent: bool = False) -> Head | None:
        """A period's snapshot (a bare board name: its all-time one), or None before the first."""
        if isinstance(period, str):
            period = PeriodKey(period, ALL, ALL)
        item = self._get(snapshot_pk(*period), consistent)
        return None if item is None else snapshot_from_item(item)

    def put_snapshot(self, snapshot: Head, previous_version: int | None) -> bool:
        """Write the snapshot unless another job wrote a newer one first; returns whether it was written."""
        kwargs: dict[str, Any] = {"TableName": self.table, "Item": snapshot_item(snapshot)}
        if previous_version is None:
            kwargs["ConditionExpression"] = "attribute_not_exists(#pk)"
            kwargs["ExpressionAttributeNames"] = {"#pk": PK}
        else:
            kwargs["ConditionExpression"] = "#version = :previous"
            kwargs["ExpressionAttributeNames"] = {"#version": "version"}
            kwargs["ExpressionAttributeValues"] = {":previous": n_attr(previous_version)}
        try:
            self.client.put_item(**kwargs)
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    # -- ranks checkpoints
    def put_ranks_checkpoint(self, period: PeriodKey, hour: str, ranks: Mapping[str, int], expires_at: int) -> None:
        """One PutItem: the ranks as compact JSON (what the head carries them as), expiring by TTL."""
        self.client.put_item(TableName=self.table, Item=ranks_checkpoint_item(period, hour, ranks, expires_at))

    def get_ranks_checkpoint(self, period: PeriodKey, hour: str) -> dict[str, int] | None:
        """One GetItem, eventually consistent: a checkpoint is read a day after it was written (and a day before its
        TTL, so never one DynamoDB has yet to delete)."""
        item = self._get(ranks_checkpoint_pk(*period, hour), consistent=False)
        return None if item is None else ranks_of_checkpoint(item)

    # -- ranked versions
    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        """Pages and rank shards of one ranked version: BatchWriteItem, 25 items a request."""
        self._batch_write([{"PutRequest": {"Item": item}} for item in rank_part_items(period, parts, expires_at)])

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        keys = [rank_page_pk(*period, rv, page) for page in range(pages)]
        keys += [rank_shard_pk(*period, rv, shard) for shard in range(shards)]
        self._batch_write([{"DeleteRequest": {"Key": {PK: s_attr(pk)}}} for pk in keys])

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: Sequence[int]) -> dict[int, RankShard]:
        by_pk = {rank_shard_pk(*period, rv, shard): shard for shard in shards}
        found: dict[int, RankShard] = {}
        for item in self._batch_get(list(by_pk)):
            found[by_pk[item[PK]["S"]]] = rank_shard_of_text(item[RANK_ENTRIES]["S"])
        return found

    def get_rank_pages(self, period: PeriodKey, rv: str, pages: Sequence[int]) -> dict[int, list[Row]]:
        by_pk = {rank_page_pk(*period, rv, page): page for page in pages}
        found: dict[int, list[Row]] = {}
        for item in self._batch_get(list(by_pk)):
            found[by_pk[item[PK]["S"]]] = rank_rows(item)
        return found

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), 25):
            pending: dict[str, Any] = {self.table: requests[start : start + 25]}
            for attempt in range(10):
                pending = self.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
                if not pending:
                    break
                time.sleep(0.05 * 2**attempt)
            if pending:
                raise RuntimeError(f"BatchWriteItem left {len(pending[self.table])} items unprocessed")

    def _batch_get(self, pks: list[str], *, keys_only: bool = False) -> list[Item]:
        found: list[Item] = []
        projection = {"ProjectionExpression": "#pk", "ExpressionAttributeNames": {"#pk": PK}} if keys_only else {}
        for start in range(0, len(pks), 100):
            keys = [{PK: s_attr(pk)} for pk in pks[start : start + 100]]
            request: dict[str, Any] = {self.table: {"Keys": keys, **projection}}
            for attempt in range(10):
                response = self.client.batch_get_item(RequestItems=request)
                found.extend(response["Responses"].get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(0.05 * 2**attempt)
        return found

    def thresholds(self, periods: Sequence[PeriodKey], consistent: bool = False) -> dict[PeriodKey, BoardState]:
        """Threshold (and, for all time, layout) of several periods: BatchGetItem, 100 keys a request."""
        by_pk = {threshold_pk(*period): period for period in periods}
        found: dict[PeriodKey, BoardState] = {}
        keys = [{PK: s_attr(pk)} for pk in by_pk]
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self.table: {"Keys": keys[start : start + 100], "ConsistentRead": consistent}}
            for _ in range(10):
                response = self.client.batch_get_item(RequestItems=request)
                for item in response["Responses"].get(self.table, []):
                    found[by_pk[item[PK]["S"]]] = board_state_from_item(item)
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
        return found

    def get_threshold(self, board: str) -> int:
        """The published all-time sparse-index threshold T (0 before any snapshot)."""
        return self.get_board_state(board).threshold

    def raise_threshold(self, period: PeriodKey, threshold: int) -> bool:
        """Publish T; it only ever rises, so a late or concurrent job can never lower it."""
        return self._conditional_update(
            threshold_pk(*period),
            "SET #t = :t",
            "attribute_not_exists(#t) OR #t < :t",
            {"#t": "threshold"},
            {":t": n_attr(threshold)},
        )

    def lower_threshold(self, period: PeriodKey, threshold: int) -> bool:
        """Lower a published T: the one way down, for the refill (services/refill.py: the snapshot job's repair and
        `shardboard refill`), which then keys every item the lower T admits."""
        return self._conditional_update(
            threshold_pk(*period),
            "SET #t = :t",
            "#t > :t",
            {"#t": "threshold"},
            {":t": n_attr(threshold)},
        )

    def raise_deep_threshold(self, board: str, threshold: int) -> bool:
        """Publish the all-time T_D; like T, it only ever rises."""
        return self._conditional_update(
            threshold_pk(board),
            "SET #t = :t",
            "attribute_not_exists(#t) OR #t < :t",
            {"#t": DEEP_THRESHOLD},
            {":t": n_attr(threshold)},
        )

    def mark_changed(self, periods: Sequence[PeriodKey], now: int, expires_at: Mapping[PeriodKey, int | None]) -> None:
        """Mark each period dirty with the time its counts changed; the sparse by-change index lists the dirty ones."""
        for period in periods:
            names = {"#chg": CHANGED, "#at": CHANGED_AT, "#board": BOARD, "#kind": PERIOD_KIND, "#bucket": BUCKET}
            values: dict[str, Any] = {
                ":chg": s_attr(DIRTY),
                ":at": n_attr(now),
                ":board": s_attr(period.board),
                ":kind": s_attr(period.kind),
                ":bucket": s_attr(period.bucket),
            }
            sets = ["#chg = :chg", "#at = :at", "#board = :board", "#kind = :kind", "#bucket = :bucket"]
            # The first change the head does not show yet (a refresh removes it): how long `verify` lets it wait.
            names["#since"] = DIRTY_SINCE
            sets.append("#since = if_not_exists(#since, :at)")
            expires = expires_at.get(period)
            if expires is not None:
                names["#expires"], values[":expires"] = EXPIRES_AT, n_attr(expires)
                sets.append("#expires = :expires")
            names["#changes"], values[":one"] = CHANGES, n_attr(1)
            # A counter, not only a time: the job marks a refresh only if no batch counted a change during it.
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(threshold_pk(*period))},
                UpdateExpression=f"SET {', '.join(sets)} ADD #changes :one",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )

    def _by_change(self, partition: str) -> list[PeriodStatus]:
        paginator = self.client.get_paginator("query")
        found: list[PeriodStatus] = []
        for page in paginator.paginate(
            TableName=self.table,
            IndexName=BY_CHANGE_INDEX,
            KeyConditionExpression="#chg = :chg",
            ExpressionAttributeNames={"#chg": CHANGED},
            ExpressionAttributeValues={":chg": s_attr(partition)},
        ):
            found.extend(period_status(item) for item in page.get("Items", []) if BOARD in item)
        return found

    def changed_periods(self) -> list[PeriodStatus]:
        """Every period whose counts changed since its last refresh."""
        return self._by_change(DIRTY)

    def periods(self) -> list[PeriodStatus]:
        """Every board's all-time period item and every dirty period (`shardboard boards`)."""
        return self._by_change(DIRTY) + self._by_change(CLEAN_BOARD)

    def mark_refreshed(self, period: PeriodKey, changes: int, now: int) -> None:
        """The snapshot includes every change counted up to ``changes``: clean, unless a batch counted another.

        A clean past period leaves the by-change index; a board's all-time item stays listed (``periods``). Either
        way the refresh is recorded and its failures in a row end; counts that came during it wait from ``now``."""
        clean = kind_of(period.kind).pick(all_time=CLEAN_BOARD, period=None)
        ended = "#since, #failures, #failing"
        update = f"SET #r = :r, #chg = :clean REMOVE {ended}" if clean else f"SET #r = :r REMOVE #chg, {ended}"
        values = {":r": n_attr(now), ":changes": n_attr(changes)}
        if clean:
            values[":clean"] = s_attr(clean)
        names = {"#r": REFRESHED_AT, "#chg": CHANGED, "#changes": CHANGES}
        names |= {"#since": DIRTY_SINCE, "#failures": FAILURES, "#failing": FAILING_SINCE}
        if self._conditional_update(threshold_pk(*period), update, "#changes = :changes", names, values):
            return
        self.client.update_item(
            TableName=self.table,
            Key={PK: s_attr(threshold_pk(*period))},
            UpdateExpression="SET #r = :r, #since = :r REMOVE #failures, #failing",
            ExpressionAttributeNames={
                "#r": REFRESHED_AT,
                "#since": DIRTY_SINCE,
                "#failures": FAILURES,
                "#failing": FAILING_SINCE,
            },
            ExpressionAttributeValues={":r": n_attr(now)},
        )

    def mark_failed(self, period: PeriodKey, now: int) -> int:
        """A refresh of the period failed: one more in a row, since the first of them."""
        response = self.client.update_item(
            TableName=self.table,
            Key={PK: s_attr(threshold_pk(*period))},
            UpdateExpression="SET #failing = if_not_exists(#failing, :now) ADD #failures :one",
            ExpressionAttributeNames={"#failing": FAILING_SINCE, "#failures": FAILURES},
            ExpressionAttributeValues={":now": n_attr(now), ":one": n_attr(1)},
            ReturnValues="UPDATED_NEW",
        )
        return int_of(response["Attributes"][FAILURES])

    # -- board layout (resharding)
    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        """Threshold and layout in one read (the aggregator reads it once per batch)."""
        response = self.client.get_item(
            TableName=self.table, Key={PK: s_attr(threshold_pk(board))}, ConsistentRead=consistent
        )
        return board_state_from_item(response.get("Item"))

    def begin_reshard(self, board: str, current: int, target: int, current_is_default: bool) -> bool:
        """Switch the layout to ``target``, remembering ``current`` until the move is done; False if not at current."""
        at_current = "#s = :from"
        if current_is_default:
            at_current = f"(attribute_not_exists(#s) OR {at_current})"
        return self._conditional_update(
            threshold_pk(board),
            "SET #s = :to, #p = :from, #board = :board",
            f"attribute_not_exists(#p) AND {at_current}",
            {"#s": BOARD_SHARDS_ATTR, "#p": PREVIOUS_BOARD_SHARDS_ATTR, "#board": BOARD},
            {":to": n_attr(target), ":from": n_attr(current), ":board": s_attr(board)},
        )

    def finish_reshard(self, board: str, previous: int, target: int) -> bool:
        """End the move: snapshots read one layout again. False if the state is not that move."""
        return self._conditional_update(
            threshold_pk(board),
            "REMOVE #p",
            "#s = :to AND #p = :from",
            {"#s": BOARD_SHARDS_ATTR, "#p": PREVIOUS_BOARD_SHARDS_ATTR},
            {":to": n_attr(target), ":from": n_attr(previous)},
        )

    def scan_layout(self, board: str, shards: int) -> list[tuple[str, str, str, str]]:
        """(pk, key attribute, GSI key, item id) of every index key of ``board`` still in layout ``shards``, from a
        consistent scan: aggregates and past entries, every period kind."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "#board = :board AND attribute_exists(#item)",
            "ExpressionAttributeNames": {"#board": BOARD, "#item": ITEM_ID},
            "ExpressionAttributeValues": {":board": s_attr(board)},
            "ConsistentRead": True,
        }
        found: list[tuple[str, str, str, str]] = []
        while True:
            response = self.client.scan(**kwargs)
            for item in response.get("Items", []):
                for name, value in item.items():
                    keyed = name in {BOARD_SHARD, DEEP_KEY} or name.startswith(PERIOD_KEY_PREFIX)
                    if keyed and layout_of(value["S"]) == shards:
                        found.append((item[PK]["S"], name, value["S"], item[ITEM_ID]["S"]))
            if "LastEvaluatedKey" not in response:
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def rekey(self, pk: str, attribute: str, old_key: str, new_key: str) -> bool:
        """Move one index key to another layout if it is still ``old_key``; False if it had moved already."""
        return self._conditional_update(
            pk, "SET #bs = :new", "#bs = :old", {"#bs": attribute}, {":new": s_attr(new_key), ":old": s_attr(old_key)}
        )

    def _shaped_update(
        self, pk: str, update: str, condition: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> bool:
        """A conditional update that needs the coarse-index shape (its condition holds ``#fmt = :fmt``): a legacy
        item that refused it is converted, and it is tried again."""
        for _ in range(CONVERT_ATTEMPTS):
            if self._conditional_update(pk, update, condition, names, values):
                return True
            if not self._converting(pk):
                return False
        return False

    def _conditional_update(
        self, pk: str, update: str, condition: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> bool:
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(pk)},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=dict(names),
                ExpressionAttributeValues=dict(values),
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True


def layout_of(index_key: str) -> int:
    """The layout S an index key belongs to: ``...#<S>#<shard>`` (board, kind and bucket hold no '#')."""
    return int(index_key.rsplit("#", 2)[1])


def rank_part_items(period: PeriodKey, parts: RankParts, expires_at: int | None) -> list[Item]:
    """The items of one ranked version: compact JSON, like the snapshot's, keeps each small."""
    items: list[Item] = []
    named: list[tuple[str, Any]] = [(rank_page_pk(*period, parts.rv, p), page) for p, page in enumerate(parts.pages)]
    named += [(rank_shard_pk(*period, parts.rv, h), shard) for h, shard in sorted(parts.shards.items())]
    for pk, entries in named:
        item: Item = {
            PK: s_attr(pk),
            RANK_ENTRIES: s_attr(compact(entries)),  # rows are NamedTuples: stored as the same lists
        }
        if expires_at:
            item[EXPIRES_AT] = n_attr(expires_at)
        items.append(item)
    return items


def rank_rows(item: Mapping[str, Any]) -> list[Row]:
    """A stored page's rows (its JSON holds them as [id, views] arrays)."""
    return list(rows(json.loads(item[RANK_ENTRIES]["S"])))


def rank_shard_of_text(text: str) -> RankShard:
    """A stored rank shard (``{id: [position, tie start, views]}``) as typed rows."""
    return {item_id: ShardRow(*entry) for item_id, entry in json.loads(text).items()}


def ranks_checkpoint_item(period: PeriodKey, hour: str, ranks: Mapping[str, int], expires_at: int) -> Item:
    return {
        PK: s_attr(ranks_checkpoint_pk(*period, hour)),
        RANKS: s_attr(compact(ranks)),
        EXPIRES_AT: n_attr(expires_at),
    }


def ranks_of_checkpoint(item: Mapping[str, Any]) -> dict[str, int]:
    """A stored checkpoint's ranks by id."""
    return cast(dict[str, int], json.loads(item[RANKS]["S"]))


def snapshot_item(head: Head) -> Item:
    """The snapshot head as the item stored in the board table (domain/publishing/head.py names its attributes and
    their text); a past period's expires by TTL."""
    item: Item = {PK: s_attr(snapshot_pk(head.board, head.period["kind"], head.bucket))}
    for name, value in stored_attributes(head).items():
        item[name] = s_attr(value) if isinstance(value, str) else n_attr(value)
    return item


def snapshot_from_item(item: Mapping[str, Any]) -> Head:
    """The snapshot head from its stored item (a head stored in the old id-keyed form converts on read)."""
    return head_from_stored({name: value.get("S", value.get("N")) for name, value in item.items() if name != PK})


def compact(value: Any) -> str:
    """Compact JSON text (a head's lists and blocks, a ranked version's rows): what the item's size counts."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
