"""The JSON shapes shardboard answers with, one pydantic model each: the HTTP API's bodies (its OpenAPI document is
generated from these, docs/openapi.json) and the CLI's ``--json`` outputs that print the same things.

The request model runs the domain's own rules (shardboard.domain.validation) as its validators, so a refused
request gets the same one-line reason over HTTP, in the CLI and in the library. Nothing here imports an AWS SDK.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from shardboard.domain import validation
from shardboard.domain.boards import BOARD_NAME, MAX_BOARDS_PER_VIEW
from shardboard.domain.items.records import ItemRecord, meta
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.snapshot import leaderboard_json

# The closed set of error codes an HTTP error body carries (README "HTTP API", docs/bad-input.md). API Gateway's own
# refusals (401/403 authorization, 429 stage throttle) are answered before any function runs, with {"message"} only.
ErrorCode = Literal[
    "bad_request",
    "origin_not_allowed",
    "not_found",
    "board_not_allowed",
    "idempotency_key_reused",
    "rate_limited",
    "throttled",
]
ERROR_STATUS: dict[str, int] = {
    "bad_request": 400,
    "origin_not_allowed": 403,
    "not_found": 404,
    "board_not_allowed": 422,
    "idempotency_key_reused": 422,
    "rate_limited": 429,
    "throttled": 503,
}


class Error(BaseModel):
    """Every HTTP error body: a one-line reason for people and a stable code for programs."""

    message: str = Field(description="Why, in one line.")
    code: ErrorCode = Field(
        description="bad_request (400), origin_not_allowed (403), not_found (404), board_not_allowed (422), "
        "idempotency_key_reused (422),"
        " rate_limited (429) or "
        "throttled (503)."
    )


def _given_viewer(value: Any) -> str:
    """An explicit ``"viewer": null`` is refused (leave the field out for no viewer)."""
    if value is None:
        raise validation.BadInput("viewer must be a string, got NoneType")
    return validation.viewer(value) or ""


ItemId = Annotated[
    str,
    BeforeValidator(validation.item_id),
    Field(
        min_length=1,
        max_length=validation.MAX_ID_BYTES,
        description="1-512 bytes of UTF-8, no control or invisible characters (format characters such as U+200B, "
        "separators, spaces other than U+0020); '/', '#', spaces and any letter are fine.",
        examples=["images/001.jpg"],
    ),
]
# Constraints first: after a BeforeValidator pydantic would write ge/le into the JSON schema as they are.
ViewCount = Annotated[int, Field(ge=1, le=validation.MAX_VIEWS_PER_REQUEST), BeforeValidator(validation.view_count)]
BoardName = Annotated[str, Field(pattern=f"^{BOARD_NAME.pattern}$")]
BoardNames = Annotated[
    list[BoardName],
    BeforeValidator(lambda value: list(validation.boards(value))),
    Field(
        max_length=MAX_BOARDS_PER_VIEW,
        description="Category boards (1-64 characters from a-z 0-9 _ . : -); the global board is implied.",
    ),
]
# Absent means no viewer; an explicit null is refused (the validator runs on it), so the schema does not offer it.
Viewer = Annotated[
    Annotated[str, Field(min_length=1, max_length=validation.MAX_VIEWER_CHARS)] | SkipJsonSchema[None],
    BeforeValidator(_given_viewer),
    Field(
        description="An opaque viewer id (1-128 printable characters): the view counts once per viewer, item and "
        "DedupeWindow; count must then be 1.",
    ),
]

UserAgent = Annotated[
    Annotated[str, Field(max_length=validation.MAX_USER_AGENT_CHARS)] | SkipJsonSchema[None],
    BeforeValidator(validation.user_agent),
    Field(
        description="The User-Agent of the visitor this view is recorded for (a backend recording for its visitor): "
        "a known crawler's view counts on the reserved board bots only (docs/honest-counts.md). Absent: a JSON body "
        "is counted as it is; a text/plain body (navigator.sendBeacon) is judged by the request's own User-Agent.",
    ),
]


class ViewRequest(BaseModel):
    """``POST /views``: the views of one item, recorded in one counter write on every board named."""

    model_config = ConfigDict(extra="forbid")

    id: ItemId
    count: ViewCount = 1
    boards: BoardNames = Field(default_factory=list)
    viewer: Viewer = None
    user_agent: UserAgent = None

    @model_validator(mode="after")
    def _one_view_per_viewer(self) -> ViewRequest:
        validation.viewed_count(self.count, self.viewer)
        return self

    def as_domain(self) -> validation.ViewRequest:
        return validation.ViewRequest(self.id, self.count, tuple(self.boards), self.viewer)


class ViewsRecorded(BaseModel):
    """``POST /views`` answered 202: the views were recorded."""

    id: str
    recorded: int = Field(ge=0, description="Views counted by this request.")
    boards: list[str] = Field(
        description="Every board the views count on: the global board first, then the others by name."
    )


class ViewSeen(ViewsRecorded):
    """``POST /views`` with a viewer: counted (202, ``duplicate`` false), or that viewer's view of the item counted
    already in this window (200, ``recorded`` 0, ``duplicate`` true)."""

    duplicate: bool


def _absent_value(value: Any) -> bool:
    return value is None


class AllTime(BaseModel):
    """``{"kind": "all"}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["all"]


class CalendarPeriod(BaseModel):
    """A calendar period (UTC) with its bounds: ``{"kind": "week", "start": ..., "end": ...}``."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(examples=["day", "week", "month"])
    start: str = Field(description="ISO-8601, inclusive.")
    end: str = Field(description="ISO-8601, exclusive.")


class RankedItem(BaseModel):
    rank: int = Field(ge=1, description="Competition rank: equal views share a rank (1, 2, 2, 4).")
    id: str
    views: int = Field(ge=0)
    previous_rank: int | None = Field(
        default=None,
        ge=1,
        description="Its rank in the snapshot before this one (compare with rank for movement); null when it was "
        "not among that snapshot's entries (new), and on entries read from a ranked version.",
    )
    day_before_rank: int | None = Field(
        default=None,
        ge=1,
        description="Its rank in the same board and period kind 24 hours before this snapshot was generated, at hour "
        "granularity: in the first snapshot of that period written in the same hour yesterday (for a day board, "
        "yesterday's board as it stood then). Null when it was not among that snapshot's entries, when no snapshot "
        "of that hour is known, and on entries read from a ranked version.",
    )
    score: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Trending only: the time-decayed view count the entry is ranked by, as of generated_at (a view "
        "then counts 1, a view one half-life older 1/2); views is it rounded. Absent on other periods.",
    )
    recent: dict[str, int] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Trending only: the entry's views in the last hour and the last 24 hours as of generated_at, by "
        'window (``{"1h": 12, "24h": 340}``; a window is its whole hours before the current one plus the current '
        "one, as ``?window=`` reads it). Absent on other periods, and on an entry a takedown moved up from the "
        "spares until the next refresh.",
        examples=[{"1h": 12, "24h": 340}],
    )
    meta: dict[str, Any] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The item's metadata (PUT /item), for the first PageSize entries of items that have some; "
        "absent otherwise.",
    )


class Leaderboard(BaseModel):
    """``GET /leaderboard`` and ``shardboard top --json``: a period's snapshot, best first."""

    board: str
    generated_at: str = Field(description="When the snapshot job gathered it (ISO-8601 UTC).")
    period: AllTime | CalendarPeriod
    items: list[RankedItem]
    window: str | None = Field(
        default=None,
        exclude_if=_absent_value,
        description="A rolling window's name (``24h``): the period is the window's hours, up to the current one.",
    )
    walk: str | None = Field(
        default=None,
        exclude_if=_absent_value,
        description="Today's answer (no offset or cursor): a cursor at offset 0 of the ranked version, to walk it.",
    )
    offset: int | None = Field(default=None, exclude_if=_absent_value, description="A page: its first entry's offset.")
    rv: str | None = Field(default=None, exclude_if=_absent_value, description="A page: the ranked version it reads.")
    cursor: str | None = Field(
        default=None,
        exclude_if=_absent_value,
        description="A page: send it back as cursor= for the next page of the same version; absent: the walk is over.",
    )

    @classmethod
    def of_snapshot(cls, snapshot: Head, limit: int | None = None) -> Leaderboard:
        return cls.model_validate(leaderboard_json(snapshot, limit))

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _absent(value: Any) -> bool:
    return value is None


class Item(BaseModel):
    """``GET /item?id=`` and ``GET /items/{id}``: an item's exact views on the global board, all time (its
    aggregate), with its metadata when it was created with ``PUT /item`` (the metadata fields are absent otherwise,
    so the answer of an item without a record is what it always was)."""

    id: str
    views: int = Field(ge=0)
    # Left out of the answer when absent (exclude_if), rather than null: older clients see what they always saw.
    meta: dict[str, Any] | None = Field(
        default=None, exclude_if=_absent, description="The document last put (absent if never put)."
    )
    created_at: str | None = Field(
        default=None, exclude_if=_absent, description="First put (ISO-8601 UTC, ms); absent if never put."
    )
    updated_at: str | None = Field(
        default=None, exclude_if=_absent, description="Last put (ISO-8601 UTC, ms); absent if never put."
    )
    status: Literal["hidden", "deleted"] | None = Field(
        default=None,
        exclude_if=_absent,
        description="hidden (off every board, still counting) or deleted (counts erased, views refused; the metadata "
        "is the one it had then); absent when visible.",
    )
    taken_down_at: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="When it was hidden or deleted (ISO-8601 UTC, ms); absent when visible, or taken down by a "
        "release that did not keep the time.",
    )

    @classmethod
    def of(cls, item_id: str, views: int | None, record: ItemRecord | None, status: str | None = None) -> Item:
        """``status``: the takedown status of an item never put (a record holds its own)."""
        if record is None:
            return cls(id=item_id, views=views or 0, status=status)  # type: ignore[arg-type]
        return cls(
            id=item_id,
            views=views or 0,
            meta=record.document(),
            created_at=record.created_at,
            updated_at=record.updated_at,
            status=record.status,  # type: ignore[arg-type]
            taken_down_at=record.taken_down_at,
        )


class AroundMe(BaseModel):
    """``GET /around`` and ``shardboard around --json``: an item's neighbours in board order, 2k + 1 entries in all
    (fewer only when the ranking holds fewer), shifted at the top and bottom."""

    board: str
    period: AllTime | CalendarPeriod
    id: str
    position: int = Field(ge=1, description="The item's place in board order.")
    above: int = Field(ge=0, description="Entries shown above the item.")
    below: int = Field(ge=0, description="Entries shown below the item.")
    source: Literal["snapshot", "ranked"] = Field(
        description="The head alone (it holds the item: its ranks are the board's), or the ranked version."
    )
    as_of: str = Field(description="When the ranking answered from was gathered (ISO-8601 UTC).")
    items: list[RankedItem]


class RankOf(BaseModel):
    """One id's answer in ``GET /rank``."""

    id: str
    views: int = Field(
        ge=0, description="Its views in the period (from the snapshot, its ranked version, or now); 0 once deleted."
    )
    rank: int | None = Field(
        ge=1, description="Exact competition rank (1, 2, 2, 4); null past the depth D, without views, or taken down."
    )
    percentile: float | None = Field(
        description="100 x (1 - (rank - 1) / of); approximate past D; null: no views, or taken down."
    )
    of: int = Field(
        ge=0,
        description="Items on the board in the period (exact when of_exact): never below a rank answered nor below "
        "the items the snapshot shows.",
    )
    of_exact: bool = Field(
        description="False when the board holds more than D items (of is then modelled), or more than the ranked "
        "version counted (of is then a lower bound)."
    )
    approximate: bool = Field(description="True past D: the rank is a model (Zipf fit of the ranked version's tail).")
    source: Literal["snapshot", "ranked", "beyond", "none", "hidden", "deleted"] = Field(
        description="What answered: the head's top N (or its spares), the ranked version, the model past D, nothing "
        "(no views); hidden or deleted: the item is taken down, whenever that was (no rank)."
    )
    as_of: str = Field(description="When the ranking answered from was gathered (ISO-8601 UTC).")
    beyond: int | None = Field(default=None, exclude_if=_absent, description="D, when the item is past it.")
    approximate_rank: int | None = Field(default=None, exclude_if=_absent, description="The model's rank past D.")


class Ranks(BaseModel):
    """``GET /rank`` and ``shardboard rank --json``: ranks of up to 100 ids, in the order asked."""

    board: str
    period: AllTime | CalendarPeriod
    ranks: list[RankOf]


def _item_meta(value: Any) -> Any:
    """The domain's rule on a put document (an object, title and URLs, <= 2 KB as compact JSON)."""
    meta(value)
    return value


class ItemMeta(RootModel[dict[str, Any]]):
    """``PUT /item?id=`` body: any JSON object of at most 2,048 UTF-8 bytes as compact JSON. ``title`` (at most 200
    characters), ``url`` and ``thumbnail`` (absolute http(s) URLs) are optional and checked when present."""

    root: Annotated[dict[str, Any], BeforeValidator(_item_meta)]

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"title": "A cat", "url": "https://example.com/cat", "thumbnail": "https://example.com/c.jpg"}]
        }
    )

    def stored(self) -> str:
        return meta(self.root)


class ItemPut(BaseModel):
    """``PUT /item?id=`` answered 200: the item as stored."""

    id: str
    meta: dict[str, Any]
    created_at: str = Field(description="First put (ISO-8601 UTC, ms): kept by later puts.")
    updated_at: str = Field(description="This put (ISO-8601 UTC, ms).")
    rev: int = Field(ge=1, description="How many puts the item has had.")

    @classmethod
    def of(cls, record: ItemRecord) -> ItemPut:
        return cls(
            id=record.item_id,
            meta=record.document(),
            created_at=record.created_at,
            updated_at=record.updated_at,
            rev=record.rev,
        )


class NewestItem(BaseModel):
    """One item of a ``GET /items`` page: its id, metadata and creation time."""

    id: str
    meta: dict[str, Any]
    created_at: str = Field(description="First put (ISO-8601 UTC, ms): the page's order, newest first.")
    updated_at: str = Field(description="Last put (ISO-8601 UTC, ms).")

    @classmethod
    def of(cls, record: ItemRecord) -> NewestItem:
        return cls(
            id=record.item_id, meta=record.document(), created_at=record.created_at, updated_at=record.updated_at
        )


class NewestPage(BaseModel):
    """``GET /items?created_after=&created_before=&limit=&cursor=``: items created in the window, newest first."""

    items: list[NewestItem]
    cursor: str | None = Field(
        description="Send it back as cursor= (with the same times) for the next page; null: the walk is over."
    )

    @classmethod
    def of(cls, items: list[ItemRecord], cursor: str | None) -> NewestPage:
        return cls(items=[NewestItem.of(record) for record in items], cursor=cursor)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class TakedownDone(BaseModel):
    """``POST /item/hide`` and ``POST /item/unhide`` answered 200."""

    id: str
    status: Literal["hidden", "visible"]
    changed: bool = Field(description="False when the item was hidden already (its snapshots were checked again).")
    patched: int = Field(ge=0, description="Snapshots patched in place (the item dropped, refilled from spares).")
    refreshed: int = Field(ge=0, description="Snapshots gathered again at once.")


class ItemDeleted(BaseModel):
    """``DELETE /item`` answered 200."""

    id: str
    status: Literal["deleted"]
    changed: bool = Field(
        description="False when the item was deleted already (the sweep ran again: that finishes one cut short)."
    )
    patched: int = Field(ge=0, description="Snapshots patched in place (the item dropped, refilled from spares).")
    refreshed: int = Field(ge=0, description="Snapshots gathered again at once.")
    erased: int = Field(ge=0, description="The item's aggregates and past period entries this sweep deleted.")


class CountDifference(BaseModel):
    """A count that is not the sum of its base counters."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    expected: int = Field(description="The sum of the item's base counters in that period (the truth).")
    found: int | None = Field(description="The stored count; null when nothing holds one.")
    board: str
    period: str = Field(description='"all", or "<kind>:<bucket>".')


class HeadBehind(BaseModel):
    """A head that does not show its period's exact top N, and why."""

    model_config = ConfigDict(extra="forbid")

    head: str = Field(description='"<board> <kind>:<bucket>".')
    state: Literal["refreshing", "stale", "capped"] = Field(
        description="refreshing: behind for less than the refresh interval plus the aggregation window (normal on a "
        "live stack); stale: behind for longer, or its refreshes fail (exit 1); capped: the exact top, cut to fit "
        "its item (docs/head-size.md)."
    )
    since: str = Field(description="When it fell behind (ISO-8601): its first failed refresh, for a failing head.")
    failures: int = Field(ge=0, description="Its refreshes that failed in a row (0: none).")


class VerifyReport(BaseModel):
    """``shardboard verify --json``: every count against its base counters, every snapshot against the truth."""

    model_config = ConfigDict(extra="forbid")

    exact: bool
    items: int
    views: int
    boards: int
    periods: int
    differences: list[CountDifference]
    index_misses: list[str] = Field(description="Items at or above their period's threshold without its index key.")
    threshold: int = Field(description="The global board's all-time threshold.")
    snapshot_exact: bool | None
    snapshots_checked: int
    snapshots_inexact: list[str] = Field(description='"<board> <kind>:<bucket>" of each snapshot that is not exact.')
    hidden: int = Field(description="Hidden items: counted like any other, left out of every snapshot's truth.")
    deleted: int = Field(description="Deleted items: left out of the truth; any count of theirs left is a difference.")
    deleted_leftovers: int = Field(
        description="What of deleted items is left where nothing reads it, not a difference: their base counters in "
        "the views table (never counted again) and their entries in periods past retention (TTL removes them)."
    )
    uncountable: int = Field(
        default=0,
        description="Base counters the aggregator skips, not a difference: an id, board name or bucket no request "
        "could write (docs/bad-input.md, the stream).",
    )
    refill_needed: list[str] = Field(
        description='"<board> <kind>:<bucket>" of each period with more takedowns above its index threshold than '
        "spares: its snapshot may miss a visible item until `shardboard refill` runs."
    )
    heads_behind: list[HeadBehind] = Field(description="The inexact heads, each refreshing, stale or capped.")
    counts_behind: bool = Field(
        description="Every difference is a count below its base counters: the stream has not been processed yet."
    )


class BoardListed(BaseModel):
    """One board of ``GET /boards``: its name and N (the most ``limit`` asks for) and D (pages end there)."""

    name: str
    top_n: int = Field(ge=1, description="N: GET /leaderboard's largest limit on this board.")
    depth: int = Field(ge=1, description="D: the ranked version's depth (offset + limit <= D); N when pages are off.")


class BoardList(BaseModel):
    """``GET /boards``: what a frontend needs to offer a stack's boards and periods without asking for a 400."""

    board: str = Field(description="The default (global) board.")
    boards: list[BoardListed] = Field(description="Every board that holds views, the default board first.")
    periods: list[str] = Field(
        description='What GET /leaderboard reads: "all", the calendar kinds and trending (period=), then the rolling '
        "windows (window=)."
    )
    top_n: int = Field(ge=1, description="N of the default board.")
    category_top_n: int = Field(ge=1, description="N of a category board (one not listed yet included).")
    page_size: int = Field(ge=1, description="P: a page's largest limit (GET /leaderboard?offset=).")
    refresh_seconds: int = Field(ge=1, description="How often the snapshot job refreshes each board.")
    script: str = Field(description="The element's versioned URL, relative to the API: cached for a year.")
