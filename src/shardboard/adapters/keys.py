"""The key scheme: every key, attribute name and index name of the three tables (template.yaml defines them).

A key is built from its parts but never parsed: the item id and shard number are stored as their own attributes,
so any id (``a#1``, ``x/y.jpg``) is safe.
"""

from __future__ import annotations

from shardboard.domain.periods import kind_of

PK = "pk"
ITEM_ID = "item_id"
SHARD = "shard"
VIEWS = "views"
BOARD = "board"
# Base counters: the anchor bucket they count in, and one counter per category board besides ``views`` (global).
BUCKET = "bucket"
BOARD_COUNTER_PREFIX = "b:"
# A counter written by `shardboard import` (on an import write shard): the import's identity, so a re-run of the
# same import recognises its own counter and another import never overwrites it.
IMPORT_ID = "import_id"
# All time's index of the releases before the coarse index (hash ``board_shard``, range ``views``): read, never
# written, until `shardboard migrate` moves its items to ``by-deep``.
BOARD_SHARD = "board_shard"
BY_VIEWS_INDEX = "by-views"
APPLIED_PREFIX = "applied_"
# Periods (docs/boards-and-periods.md): per kind a count (``n_``), a GSI key (``g_``) and the index's range key
# (``v_``): the count's bucket, so a count change is an index write only when its bucket changes
# (docs/coarse-index.md). Releases before held the count itself in ``v_``: an item without ``fmt`` is in that shape,
# and a write to it converts it first (``shardboard migrate`` converts them all).
PERIOD_COUNT_PREFIX = "n_"
PERIOD_BUCKET_PREFIX = "v_"
PERIOD_KEY_PREFIX = "g_"
FORMAT = "fmt"
COARSE_FORMAT = 2
# Past entries (an archived or late anchor bucket, a past coarser period) remember the aggregate views they were
# copied from, so a stale copy never overwrites a newer one.
SOURCE_VIEWS = "source_views"
EXPIRES_AT = "expires_at"
# Period items: threshold, last change and last refresh; the by-change index finds the periods to refresh.
CHANGED = "chg"
CHANGED_AT = "changed_at"
CHANGES = "changes"
REFRESHED_AT = "refreshed_at"
# Since when a period's counts wait for a refresh, and the refreshes that failed in a row since ``failing_since``.
DIRTY_SINCE = "dirty_since"
FAILURES = "failures"
FAILING_SINCE = "failing_since"
BY_CHANGE_INDEX = "by-change"
# Values of ``chg``: a period to refresh, or a board whose all-time snapshot is up to date (listed by `boards`).
DIRTY = "dirty"
# What the by-change index projects (template.yaml): enough to list periods without reading them.
CHANGE_PROJECTION = ("board", "kind", "bucket", "threshold", "changed_at", "refreshed_at", "changes")
CLEAN_BOARD = "board"
PERIOD_KIND = "kind"
# Board state on the threshold item: the GSI layout (S) and, while a reshard is moving items, the previous S.
BOARD_SHARDS_ATTR = "board_shards"
PREVIOUS_BOARD_SHARDS_ATTR = "previous_board_shards"
# All time's index (docs/coarse-index.md): KEYS_ONLY, hash ``dk`` (the board-shard value), range ``db`` (the bucket
# of the views), like a period kind's; T_D (``deep_threshold``: the D-th best with ranked versions) on the period item.
DEEP_KEY = "dk"
DEEP_BUCKET = "db"
BY_DEEP_INDEX = "by-deep"
DEEP_THRESHOLD = "deep_threshold"


def view_pk(item_id: str, shard: int, bucket: str = "all") -> str:
    return f"view#{shard}#{bucket}#{item_id}"


# Dedupe markers (docs/honest-counts.md) live in the base table beside the counters: no item_id, shard or bucket, a
# key outside ``view#``, so the stream filter, the aggregator, verify and rebuild never take one for a counter.
SEEN_PREFIX = "seen#"
SEEN_TOKEN = "tok"  # noqa: S105 (an attribute name, not a secret)


def seen_pk(window: int, viewer: str, item_id: str) -> str:
    """The marker of (dedupe window, viewer, item). The viewer is length-prefixed, so no viewer and item pair can
    spell another's key whatever either holds (``a#b`` + ``c`` vs ``a`` + ``b#c``)."""
    return f"{SEEN_PREFIX}{window}#{len(viewer)}#{viewer}#{item_id}"


# Rate-limit allowances (docs/honest-counts.md "Rate limits"): one counter per (window, client kind, client) beside
# the counters, outside ``view#`` like the markers, expiring by the same TTL attribute.
RATE_PREFIX = "rate#"
RATE_USED = "used"


def allowance_pk(window: int, kind: str, client: str) -> str:
    """The allowance counter of one client in one window. The client comes last, so whatever it holds (an IPv6
    network's ``/``, a viewer's ``#``) it cannot spell another window's or kind's key."""
    return f"{RATE_PREFIX}{window}#{kind}#{client}"


# Idempotency keys (docs/honest-counts.md, "Retried writes"): one marker per key beside the counters, outside
# ``view#`` like the dedupe markers, holding the request's fingerprint and its answer, expiring by the same TTL.
IDEMPOTENCY_PREFIX = "idem#"
FINGERPRINT = "fp"
ANSWER = "ans"


def idempotency_pk(key: str) -> str:
    """The marker of one Idempotency-Key (the key last: whatever it holds, it cannot spell another item's key)."""
    return f"{IDEMPOTENCY_PREFIX}{key}"


# Retry-safe writers (the library's Recorder): an atomic counter hands out writer numbers, and each counter item a
# writer writes keeps that writer's last sequence in an attribute of its own (never a counter: not ``views``/``b:``).
WRITERS_PK = "writers#"
LAST_WRITER = "last_writer"
WRITER_PREFIX = "w:"


def writer_attr(writer: int) -> str:
    return f"{WRITER_PREFIX}{writer}"


def board_counter(board: str) -> str:
    """The base counter attribute of a category board (the global board's is ``views``)."""
    return f"{BOARD_COUNTER_PREFIX}{board}"


def aggregate_pk(board: str, item_id: str) -> str:
    # Board names have no '#', so the board part ends at the first '#' whatever the id holds.
    return f"item#{board}#{item_id}"


def entry_pk(board: str, kind: str, bucket: str, item_id: str) -> str:
    """A past period's entry of one item (an archived anchor bucket, a late one, a past week or month)."""
    return f"entry#{board}#{kind}#{bucket}#{item_id}"


def snapshot_pk(board: str, kind: str = "all", bucket: str = "all") -> str:
    return f"snapshot#{kind_of(kind).key(board, bucket)}"


def threshold_pk(board: str, kind: str = "all", bucket: str = "all") -> str:
    """The period item: threshold, change marks; for all time also the board's GSI layout."""
    return f"threshold#{kind_of(kind).key(board, bucket)}"


def count_attr(kind: str) -> str:
    """The attribute holding a period kind's count (all time keeps ``views``)."""
    return kind_of(kind).named(PERIOD_COUNT_PREFIX, all_time=VIEWS)


def bucket_attr(kind: str) -> str:
    """A period kind's index range key: the bucket of its count."""
    return kind_of(kind).named(PERIOD_BUCKET_PREFIX, all_time=DEEP_BUCKET)


def index_key_attr(kind: str) -> str:
    return kind_of(kind).named(PERIOD_KEY_PREFIX, all_time=DEEP_KEY)


def index_name(kind: str) -> str:
    return kind_of(kind).named("by-", all_time=BY_DEEP_INDEX)


def shards_pk(item_id: str) -> str:
    return f"shards#{item_id}"


# The shards table, never the views table, holds each UTC day's key of anonymous viewer ids (TTL: expires_at).
DAILY_KEY = "key"


def daily_key_pk(day: str) -> str:
    return f"daily-key#{day}"


def applied_attr(shard: int) -> str:
    return f"{APPLIED_PREFIX}{shard}"


# Shard metadata (docs/dynamic-sharding.md).
NUMBER_OF_SHARDS = "number_of_shards"
LAST_UPDATED = "last_updated"
MAX_SHARDS = "max_shards"
SHARD_HISTORY = "shard_history"
REVIEWED_VIEWS = "reviewed_views"
REVIEWED_AT = "reviewed_at"
QUIET_SINCE = "quiet_since"


# The items table: key pk + sk; the record is sk "meta" under item#<id>, keys built here and never parsed.
SK = "sk"
ITEM_RECORD_SK = "meta"
ITEM_META = "meta"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
REV = "rev"
# The by-created index (newest items, a later slice): hash cs = c#<shard>, range ck = <created_at>#<id>.
CREATED_SHARD = "cs"
CREATED_KEY = "ck"
BY_CREATED_INDEX = "by-created"


def item_record_pk(item_id: str) -> str:
    return f"item#{item_id}"


# Ranked versions (docs/proposals/items-and-ranks.md section 3): a period's exact top D, written by the snapshot job
# as pages (P entries each, in board order) and rank shards (id -> position), under a version id ``rv`` that is
# unique per write, so two racing jobs never overwrite each other's items.
RANK_PAGE_PREFIX = "rpage#"
RANK_SHARD_PREFIX = "rrank#"
RANK_ENTRIES = "entries"


# Ranks checkpoints (domain/publishing/day_before.py): a period's head ranks as its first head of an hour held them,
# read a day later for the entries' day_before_rank; no item_id, so scans of the counts never take one.
RANKS_CHECKPOINT_PREFIX = "dayranks#"
RANKS = "ranks"


def ranks_checkpoint_pk(board: str, kind: str, bucket: str, hour: str) -> str:
    return f"{RANKS_CHECKPOINT_PREFIX}{board}#{kind}#{bucket}#{hour}"


def rank_page_pk(board: str, kind: str, bucket: str, rv: str, page: int) -> str:
    return f"{RANK_PAGE_PREFIX}{board}#{kind}#{bucket}#{rv}#{page}"


def rank_shard_pk(board: str, kind: str, bucket: str, rv: str, shard: int) -> str:
    return f"{RANK_SHARD_PREFIX}{board}#{kind}#{bucket}#{rv}#{shard}"


# Takedowns (docs/proposals/items-and-ranks.md section 2): the record's status and who set it and why,
# audit rows under the item, and one marker item per hidden (deleted) id in the partition hidden#<h> (deny#<h>).
# Releases before the markers kept the ids in one String Set per partition (sk ``set``), which filled up at 400 KB:
# readers still honour such a set and `shardboard rebuild` moves its ids to markers.
ITEM_STATUS = "st"
REASON = "reason"
BY = "by"
OP = "op"
AT = "at"
SET_IDS = "ids"
SET_SK = "set"
HIDDEN_SETS = 8


def audit_sk(at: str, unique: str) -> str:
    return f"audit#{at}#{unique}"


def hidden_set_pk(shard: int) -> str:
    return f"hidden#{shard}"


# Deleted ids (a delete's tombstone): as many String Sets as the hidden ones, sharded the same way.
DENY_SETS = HIDDEN_SETS


def deny_set_pk(shard: int) -> str:
    return f"deny#{shard}"


def skeleton_set_pk(shard: int) -> str:
    """The partition of the skeleton markers of deleted ids (their look-alikes are refused): markers only."""
    return f"alike#{shard}"


# A marker's sort key: "id#" sorts before the old set's "set", so a partition read in descending key order meets the
# old set (if any) first, however many markers follow it. Then a stable hash of the id (fixed width), so markers sort
# in hash order: any first page of a partition is a fair sample of it, and tells how much of it is left.
TAKEDOWN_PARTITIONS = HIDDEN_SETS
MARKER_SK_PREFIX = "id#"
MARKER_ORDER_DIGITS = 8  # hex digits: a 32-bit hash
MARKER_ORDER_SPACE = 16**MARKER_ORDER_DIGITS


def marker_sk(order: int, item_id: str) -> str:
    return f"{MARKER_SK_PREFIX}{order:0{MARKER_ORDER_DIGITS}x}#{item_id}"


def marker_order_of(sk: str) -> int:
    return int(sk[len(MARKER_SK_PREFIX) : len(MARKER_SK_PREFIX) + MARKER_ORDER_DIGITS], 16)


def marker_item_id(sk: str) -> str:
    """The id of a marker: its sort key past the fixed-width prefix. The one key read back, because the marker holds
    nothing else (a second copy of a 512-byte id would double what a listing reads); a fixed width is exact for any
    id."""
    return sk[len(MARKER_SK_PREFIX) + MARKER_ORDER_DIGITS + 1 :]


# The board registry (domain/boards.py, the Boards policy): in the shards table beside the shard metadata, one item
# per category board and one count of them; no item_id, so ShardMetadataStore.scan never takes one for an item.
BOARD_REGISTRY_PREFIX = "board#"
BOARDS_COUNT_PK = "boards"
REGISTERED = "registered"  # the count item's number of boards
REGISTERED_AT = "registered_at"
BOARD_ORIGIN = "origin"  # "view": created by a writer within the cap; "existing": held views before the registry


def board_registry_pk(board: str) -> str:
    return f"{BOARD_REGISTRY_PREFIX}{board}"


# The settings a stack publishes for its clients (adapters/stack_config.py): one item in the board table, outside
# every other prefix and without item_id, so no scan, gather or rebuild ever takes it for a count.
STACK_CONFIG_PK = "stack#config"
PUBLISHED_SETTINGS = "settings"
PUBLISHED_FORMAT = "format"
PUBLISHED_AT = "published_at"
PUBLISHED_BY = "published_by"
