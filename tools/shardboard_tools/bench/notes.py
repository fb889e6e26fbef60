"""The explanatory part of docs/benchmarks.md (the figures around it are generated)."""

NOTES = """
## How it is measured

- **Virtual time.** View *i* arrives at simulated second *i / rate*. Every request a design makes is stamped with that
  time and priced by its own `CapacityEmulator` (`tools/shardboard_tools/capacity/`): 1 write unit per started KB of
  the larger of the old and new item, index writes on the GSI's partition key value (none when the item is in the
  index neither before nor after, two when an indexed sort key changes), eventually consistent reads at half cost,
  queries by summed size per 4 KB. A partition key value (of a table or of a GSI) that would exceed 1,000 write units
  or 3,000 read units within one simulated second is refused with `ProvisionedThroughputExceededException`, and
  nothing is booked, as DynamoDB does. No burst capacity is modelled in the benchmark: DynamoDB never lets one
  partition key value exceed those ceilings, burst or not.
- **Real code decides the requests.** `shardboard` runs `record_views` against an in-memory base table, the real
  aggregator (`handlers.aggregate.aggregate`: `apply_stream_batch`'s record decoding, the window state, the fold,
  `apply_deltas` and Powertools' partial batch response) on that table's stream in 1,000-record batches inside 10 s
  tumbling windows (`AggregationWindowSeconds`; `--aggregation-window 0` applies every batch as it comes), and
  `take_snapshot` every refresh interval. Delivery is Lambda's: batches never cross a window; a window's final
  invocation comes once the clock passes its end; the state travels as JSON between invocations and a state over 1 MB
  ends the window early; a final invocation that fails is retried a simulated second later with the same state. Without
  windows, a batch with throttled items reports them and Lambda's resume-from-the-lowest-failed-record is replayed
  likewise.
- **The aggregator's requests take time.** One invocation does not send thousands of writes in one instant: its
  requests are stamped as the deployed function sends them, 16 in flight (`WRITE_CONCURRENCY`) at 5 ms each
  (`capacity.emulator.PacedClock`), so a window's final invocation spreads its writes over a few simulated seconds.
- **The seed designs** are seed 002's (docs/background.md) as written: one `UpdateItem ADD ViewCount :1` per view on
  the image item, a leaderboard GSI on `IMAGES` (or on a `PARTITION_k` drawn at creation), and N items queried from
  every GSI partition value per refresh.
- **Metrics.** `write units per view` counts every write unit (base, aggregates, GSI, snapshot, threshold) over the
  views recorded. `max partition write units/s` is the busiest partition key value in any one simulated second. `viral
  item views/s sustained` bisects (2 %) on the rate of a single item, each probe lasting 2 simulated seconds, for the
  highest rate with zero throttled requests. `items read per refresh` is the last refresh of the run (steady state: it
  sizes its first pages from the previous snapshot). `aggregator CPU` is `time.process_time` of the real handler path
  per record, minus the in-memory stores' own time (the board table's requests and the deny reads' on the items table:
  in Lambda that time is the DynamoDB client's), with the calibrated cost of that metering removed, best of 3 runs; the
  window state's JSON round trip at every invocation is included (a cost the window adds); decoding the event's records
  and freeing them afterwards are not (the Lambda runtime's work, the same for any stream consumer). It is the only
  machine-dependent figure.
- **Exactness.** `exact top N` compares each design's last leaderboard with the true top N of the views it recorded.

## Where the write units go, and why windows

With exactly-once aggregation a view costs 1 base write, each distinct item of an aggregation 1 aggregate write, and
each distinct *indexed* item 2 index writes (its sort key `views` moved: a delete and a put). For Zipf s = 1 over
100,000 items a 1,000-record batch holds 622 distinct items on average, so applying batch by batch costs at least
1 + 0.62 = 1.62 units per view before any index write, and the top 1,000 items alone are 244 distinct items per batch
(+0.49): 2.45 per view measured (`shardboard bench --design shardboard --aggregation-window 0 --no-files`).
A tumbling window folds every batch of the window into one write per item: at 5,000 views/s a 10 s window holds
50,000 records but only ~15,000 distinct items, and the top items are written once per window instead of once per
batch. The price is freshness (counts reach the board up to one window later) and the state Lambda carries between
invocations (~8 bytes per record, packed: docs/exactly-once.md, "Tumbling windows").

## About the CPU figure

The figure is measured as the aggregator runs in its Lambda: alone in the process, batch after batch (the first
100,000 views of the workload), and first, before the main run: after it, the run's tables (kept or freed) scatter
the heap and the same measurement reads about a tenth more (10.7 and 11.1 us against 9.8 on a quiet machine). The
second row is the same path measured during the main run, where the simulated
writers run between batches and evict the aggregator's working set from the CPU caches. What changed to get here,
from ~118 us per record first measured on this harness: the aggregator reads only the four attributes it needs from
the stream record's wire-format images, first on a fast path of plain lookups (`counter_steps`; anything
unusual takes the careful path that names the reason), the fold reads records by position, board shards are cached
per item id, `apply_deltas` applies items inline when `write_concurrency` is 1 (the in-memory store has no network
latency to overlap; in Lambda the pool stays), the processor lets go of its batch once it has answered (Powertools
kept the previous event alive until the next invocation, which then paid ~2 us per record to free it), and with
windows the per-item work (plan and check the compare-and-set, ~6 us per item) is paid once per window. What remains
is plain Python: ~2-3 us to read and validate a record, ~1 us of Powertools' batch bookkeeping, ~1 us to pack it into
the window state and ~1.5 us to unpack and fold it, ~0.5 us of state JSON. The figure moves by up to +-30 % with the
load of this shared 2-core machine, hence the best of 3 runs; applying every batch without a window costs more per
record (11.3 us in the same session: each distinct item of every batch plans its own compare-and-set).

Where the time goes, by a sampling profile of the aggregator's own time (store calls left out, as the figure leaves
them out; `py-spy record --format raw -- shardboard bench --scenario designs --design shardboard --views 100000
--no-files`, with the coarse index, on a loaded machine): 41 % reading the stream records
(`adapters/stream_records.py`), 21 % the plans (`domain/aggregating/aggregation.py`), 18 % the service's loop
(`services/aggregating.py`), 14 % the fold and its moves (`batch.py`), 6 % the tumbling window.
"""


BOARDS_NOTES = """
## How to read it

- **seed-per-board** is seed 002's sharded design applied to every (board, period) on its own: one counter item per
  (board, period bucket, image), each view an `UpdateItem ADD` on 2 boards x 4 periods = 8 items, each keyed in its
  leaderboard GSI. It throttles on the hot items, loses those views, and its boards are not exact.
- **straightforward** is today's single-board design extended the obvious way (our own simulation): one aggregate per
  (board, item) holding its current day, week, month and all-time counts, written once per tumbling window, and one
  sparse GSI per period with the count as the sort key.
- **shardboard** is this project's code (record_views, the real aggregator handler in Lambda tumbling windows,
  `refresh_changed`): one base write per view holding a counter per board, one aggregate per (board, item) with all
  its current periods, past periods archived into entries when the aggregate moves on (docs/boards-and-periods.md).
- **shardboard+24h** is the same with `Periods=day,week,month,24h`: every board also readable as its last 24 hours.
  The window brings the `hour` period (base counters keyed by hour, one more index, hours' thresholds published
  2 (N+R) deep so that window sums can be proven) and each refresh sums a board's hours into its window head
  (docs/rolling-windows.md). Its last window heads are checked against the brute force (the run is shorter than a
  day, so a window holds every view: its top is the all-time top).
- **shardboard+trending** is the same with `Periods=day,week,month,trending`: every board also ranked by a decayed
  count (half-life 6 h). It brings `hour` too and its own index (`by-trending`); each trending head sums two epochs
  (docs/trending.md). Its last trending heads are checked against a brute-force weighted sum of the views.

## Events and scan fallbacks

The shardboard designs run the snapshot job as it is deployed with an event bus (docs/events.md): each run refreshes
with an `Announcer` over an in-memory sink and then closes the periods that ended (`close_ended`, as
`refresh_snapshots` does), so the UTC midnight halfway closes every board's day (and its hour, where hours are
counted) once.
`events published` counts the entries the sink received (entered and left the top N, closed), per run its mean and
max; `PutEvents requests` and `billed events` are what the EventBridge adapter would send for them (at most 10
entries and 256 KB a request) and be billed (each 64 KB of an entry counts as one event: a closed event listing a top
1,000 is several). Events are priced by EventBridge, not DynamoDB: they are in none of the units and not in the cost
above. The announcer reads nothing to publish a refresh's events (they derive from the head it wrote and the one it
read before); closing reads the ledger and each ended head once, in the runs just after a boundary: those read units
are shown apart and kept out of the other rows, which stay as they were without events. Every period starts empty in
this run, so a period's first head announces each of its entries as entered: the first runs after the start (and
the new day's first) dominate the max.

`window scan fallbacks` counts the sums of periods (a window's hours, a trending head's two epochs) that the
published thresholds could not prove, so that the job counted them from one scan of the board table instead (exact,
and it reads the whole table: docs/rolling-windows.md, "What it costs").

## Where the units go, and the floor

Every design pays one base write per view. The aggregate write per (board, item) per window is the same for
straightforward and shardboard (about 0.3 per view per board at 10 s windows: the Zipf tail makes most items appear
once per window). The rest is index writes. In the straightforward simulation an item in a period's index pays two
index writes whenever its count, the sort key, changes, and it keys every item while a period's threshold is still
0 (before its first snapshot), so at each period's start every item joins, in four indexes. shardboard's batches
prove their own thresholds instead (docs/sparse-index.md, "The batch's own threshold"): a period's first batch keys
about K items per board (its N + R best), publishes their K-th best count, and keys nothing below it; and its
period indexes sort by a bucket of the count (docs/coarse-index.md), so a keyed item pays index writes only when its
count crosses into the next bucket (powers of 16); all time too (`by-deep`).

### Before and after the batch's own threshold

The default command, the same workload and prices, on the commit before (ad4629b) and now:

| shardboard | before | after |
|---|---:|---:|
| write units per view | 4.255 | 2.582 |
| aggregates (and past entries) | 0.965 | 0.840 |
| GSI entries | 2.280 | 0.732 |
| worst / mean refresh read ratio | 2.09 / 1.29 | 1.90 / 1.16 |
| throttled requests | 2,430 | 0 |
| cost per million views | $2.66 | $1.62 (-39 %) |

The index writes fell to a third (a new period's first batch no longer keys every item it touches, and an
aggregate rolling into the new day keys the entry it archives only at or above the old day's T); the aggregate writes
fell too (an aggregate crossing several thresholds joins their indexes in one write, and far fewer items join); the
throttling was the join storm on the index partitions at the day boundary. shardboard now costs less than the
straightforward design (2.582 against 3.681 write units per view) while it keeps what that simulation gives up:
past periods archived and queryable, late views, exactly-once bookkeeping. A batch lifts only a period that has no
T yet; lifting above the job's T too measured 2.543 (-40 %), but is only safe once the aggregator can tell hidden
witnesses (docs/sparse-index.md).

### Before and after the coarse index

The default command, the same workload and prices, on the commit before (4cc5d79: every period index sorted by the
count) and with the period indexes sorted by a bucket of the count (docs/coarse-index.md), each design exact:

| design | write units per view | GSI | refresh read units per view | $/M views |
|---|---:|---:|---:|---:|
| shardboard (day, week, month) | 2.584 -> 2.296 | 0.732 -> 0.435 | 0.012 -> 0.148 | 1.62 -> 1.45 (-10 %) |
| shardboard+24h | 3.213 -> 2.746 | 1.234 -> 0.759 | 0.044 -> 0.606 | 2.01 -> 1.79 (-11 %) |
| shardboard+trending | 3.065 -> 2.603 | 1.096 -> 0.624 | 0.076 -> 0.352 | 1.93 -> 1.67 (-13 %) |

By index (shardboard): `by-day` 0.179 -> 0.129, `by-week` and `by-month` 0.183 -> 0.059, `by-views` (all time, still
sorted by the views) 0.183 both. The aggregates rose a little (0.840 -> 0.849): each bucket a count crosses is one
more aggregate write (the raise) besides its two index writes. The refresh reads grew tenfold, since a refresh reads
the exact counts of about N+R candidates (0.5 read units each) instead of N+S index entries, and stay about 1 % of
the cost here; docs/coarse-index.md has the break-even rate below which they cost more than they save. Against the
issue's "today" (3.96 write units per view on 400,000 views, $2.66 per million at 200,000 before the batch's own
threshold) this is -42 % and -45 %; below the straightforward design ($2.30) by 37 %.

### All time on the coarse index too, and one bucket of slack

The same workload with all time keyed in `by-deep` by the bucket of its views (docs/coarse-index.md, "All time on
the same index"), then with every item keyed one bucket above its count's (`index_bucket`: a count may grow
sixteenfold after its join without a raise), shardboard (day, week, month), measured by wrapping the capacity
emulator around the bench's own run (its units by table, index and request):

| what | all time by the views | all time by a bucket | + one bucket of slack |
|---|---:|---:|---:|
| base counters (one per view) | 1.000 | 1.000 | 1.000 |
| aggregate writes (moves 0.599, rolls 0.108, then joins and raises) | 0.739 | 0.742 | 0.730 |
| past entries archived at the day boundary | 0.108 | 0.108 | 0.108 |
| `by-day` (joins and raises, day-boundary rekeys, archived entries keyed) | 0.129 | 0.129 | 0.117 |
| `by-week` / `by-month` | 0.059 / 0.059 | 0.059 / 0.059 | 0.041 / 0.041 |
| all time (`by-views`, then `by-deep`) | 0.183 | 0.059 | 0.041 |
| snapshots, thresholds, marks | 0.018 | 0.018 | 0.018 |
| total | 2.296 | 2.175 | 2.098 |
| read units per view (refreshes, deny checks) | 0.153 | 0.200 | 0.210 |
| cost per million views | $1.45 | $1.38 | $1.34 |

What would get lower still: the floor (1.85 before any index write) is the aggregate moves, one per board, item and
window (longer aggregation windows merge more views per write), and the day boundary's archived entries plus the
roll that moves each aggregate on; the index writes left (0.25) are joins, each period's first keying of its N + R
best and the items that cross its rising T, which this run (every period starting empty) pays in full, and the new
day's rekeys.

### Reading the aggregates that may roll

A move finds an aggregate in an older day only when the table refuses it: a write unit spent per aggregate rolling
into the new day, 21,564 on this run. The aggregator now reads the aggregates of the deltas that may roll first
(those starting every write shard from 0; BatchGetItem, eventually consistent: half a read unit each, a tenth of the
refused write's price; docs/boards-and-periods.md, "Reading before a roll"), and the counts it saw let a move join
the indexes they reach in its own write instead of a second one (3,842 of 4,718 joins after a move). Measured the
same way as above, shardboard (day, week, month):

| what | one bucket of slack | + reading before a roll |
|---|---:|---:|
| base counters (one per view) | 1.000 | 1.000 |
| aggregate writes (moves, rolls, joins and raises) | 0.730 | 0.603 |
| past entries archived at the day boundary | 0.108 | 0.108 |
| index (`by-day` 0.117, `by-week`, `by-month`, `by-deep` 0.041 each) | 0.240 | 0.240 |
| snapshots, thresholds, marks | 0.018 | 0.018 |
| total | 2.098 | 1.971 |
| read units per view (refreshes, deny checks, reads before a roll) | 0.210 | 0.494 |
| cost per million views | $1.34 | $1.29 |

The reads are 113,558 aggregates (0.28 read units per view), of which 21,564 rolled, 15,960 were in the new day
already and 76,034 did not exist yet: this run starts with an empty table, so most items are new to it; a deployed
table's items mostly exist, and an item viewed many times a day reads at most once per write shard per day.

What would get lower still: the floor is now 1.71 before any index write (base 1.0, moves 0.60, the day boundary's
archived entries 0.11); the moves are one per board, item and window, so a longer aggregation window merges more
views per write; the index writes left (0.24) are each period's first keying of its N + R best, the items that cross
its rising T (this run starts every period empty) and the new day's rekeys.

### Where the remaining units go (before the coarse index)

Counted on this run (200,000 views) by wrapping the in-memory board store's methods, a one-off measurement on the
commit before the coarse index:

| what | writes | write units per view |
|---|---:|---:|
| base counters (one per view) | 200,000 | 1.000 |
| aggregate moves (one per board, item and window) | 119,804 | 0.599 |
| day boundary: archived entries + aggregates moved on | 21,564 + 21,564 | 0.216 |
| joins after the count (one write per item, every kind at once) | 4,718 | 0.024 |
| index: count changes of keyed items (2 units each) | 48,643 | 0.486 |
| index: joins (1 unit each) | 39,123 | 0.196 |
| index: the day boundary (rekeys 2, leaves 1) | 2,971 + 3,261 | 0.046 |

The floor of this scheme: base, moves and the day boundary are 1.82 write units per view before any index write, so
2.0 needs the index (and its joins) under 0.2. Two thirds of what is left is count changes of keyed items, each
two index writes because the count is the sort key. Measured levers:

- **A coarse sort key** (a geometric bucket of the count, keys only; the exact counts of the candidates read with
  BatchGetItem at refresh time, as the all-time deep tier already does; docs/coarse-index.md): on this run only
  15,232 of those 48,643 count changes change a base-4 bucket, 6,510 a base-16 bucket. Written as the deep tier
  writes its bucket (one aggregate write and two index writes per bucket change), that would bring the changes from
  0.49 to about 0.23 (base 4) or 0.10 (base 16) write units per view: about 2.32 or 2.19 in total. **Built for the
  period kinds** (next section); all time is the step after.
- **Longer aggregation windows** (AggregationWindowSeconds, 10 s here): the 0.6 moves per view are one per (board,
  item) per window; a longer window merges more views per write, at the price of freshness.
- **Longer periods of life**: in a real deployment the all-time and monthly thresholds are high and stable, so those
  indexes see few joins; only the new day restarts at 0. This run starts every period empty, its worst case.

The default, 200,000 views, is sized for the designs to finish within 10 minutes on this 2-core machine: the five
designs took 8 min 51 s with nothing else running before the coarse index (`shardboard bench --scenario boards
--json --no-files`; seed-per-board 139 s, straightforward 31 s, shardboard 95 s, shardboard+24h 125 s,
shardboard+trending 132 s of their own wall time), and 12 min 21 s for the run above, which a chaos run shared the
machine with (the shardboard design alone: 116 s under the same load). With reading before a roll and the cheaper
aggregator, the five designs took 5 min 21 s while a chaos run shared the machine (`shardboard bench --scenario
boards --json`: seed-per-board 77 s, straightforward 17 s, shardboard 62 s, shardboard+24h 89 s,
shardboard+trending 74 s). A bigger `--views`
keeps the day boundary halfway and runs longer; every period starts empty and its threshold rises with time, so
the per-view figures fall as the run lengthens (400,000 views: 3.958 write units per view for shardboard before the
batch's own threshold, 2.633 with its first version).
"""
