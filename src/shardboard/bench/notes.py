"""The explanatory part of docs/benchmarks.md (the figures around it are generated)."""

NOTES = """
## How it is measured

- **Virtual time.** View *i* arrives at simulated second *i / rate*. Every request a design makes is stamped with
  that time and priced by its own `CapacityEmulator` (`src/shardboard/capacity/`): 1 write unit per started KB of
  the larger of the old and new item, index writes on the GSI's partition key value (none when the item is in the
  index neither before nor after, two when an indexed sort key changes), eventually consistent reads at half cost,
  queries by summed size per 4 KB. A partition key value (of a table or of a GSI) that would exceed 1,000 write
  units or 3,000 read units within one simulated second is refused with `ProvisionedThroughputExceededException`,
  and nothing is booked, as DynamoDB does. No burst capacity is modelled in the benchmark: DynamoDB never lets one
  partition key value exceed those ceilings, burst or not.
- **Real code decides the requests.** `shardboard` runs `record_views` against an in-memory base table, the real
  aggregator (`AggregatingProcessor` + `read_view` + `apply_batch`) on that table's stream in 1,000-record batches,
  and `take_snapshot` every refresh interval. A batch with throttled items reports them as failed and Lambda's
  resume-from-the-lowest-failed-record is replayed a simulated second later. The seed designs are seed 002 as
  written: one `UpdateItem ADD ViewCount :1` per view on the image item, a leaderboard GSI on `IMAGES` (or on a
  `PARTITION_k` drawn at creation), and N items queried from every GSI partition value per refresh.
- **Metrics.** `write units per view` counts every write unit (base, aggregates, GSI, snapshot, threshold) over the
  views recorded. `max partition write units/s` is the busiest partition key value in any one simulated second.
  `viral item views/s sustained` bisects (2 %) on the rate of a single item, each probe lasting 2 simulated seconds,
  for the highest rate with zero throttled requests. `items read per refresh` is the last refresh of the run
  (steady state: it sizes its first pages from the previous snapshot). `aggregator CPU` is `time.process_time` of
  the real handler path per record, minus the in-memory store's own time (in Lambda that time is the DynamoDB
  client's), with the calibrated cost of that metering removed; it is the only machine-dependent figure.
- **Exactness.** `exact top N` compares each design's last leaderboard with the true top N of the views it
  recorded.

## Targets missed, and why

**Write units per view (target 1.7).** With exactly-once aggregation a view costs 1 base write, each distinct item
in a batch 1 aggregate write, and each distinct *indexed* item in a batch 2 index writes (its sort key `views`
moved: a delete and a put). For Zipf s = 1 over 100,000 items a 1,000-record batch holds 622 distinct items on
average, so the floor is 1 + 0.62 = 1.62 before any index write, and the top 1,000 items alone are 244 distinct items
per batch: +0.49. Any design that keeps an exact `views` sort key in the index, batch by batch, pays about 2.1 write
units per view at this batch size; 1.7 needs larger effective batches (fewer distinct items per record) or an index
whose sort key is not rewritten on every batch (for instance a sort key refreshed once per snapshot interval, which
needs its own exactness argument). On top of the 2.1, every item aggregated before the first snapshot published
T > 0 joined the index and stays there (docs/sparse-index.md), which the breakdown above shows as the GSI's share.
The sparse index does its part for items that arrive later: a long-tail item below T pays no index write at all.

What larger effective batches buy, measured with this harness (`shardboard bench --design shardboard --batch-size
B --no-files`, same workload): B = 10,000 gives 1.89 write units per view, B = 50,000 gives 1.50 (0.31 aggregate +
0.19 index + 1 base). Lambda's tumbling windows (`TumblingWindowInSeconds`) would give the aggregator that many
records per write while batches stay at 1,000: each invocation folds its batch into the window's state and the
final one writes. A first try showed one more thing to solve before it pays: the first window's final invocation
writes every item of the window at once while the published threshold is still 0, so they all join the index in one
burst that throttles a GSI partition (1,000 units/s); the threshold needs bootstrapping first (the snapshot job
scanning the board once before it publishes T).

**Aggregator CPU per record (target 10 us).** The figure is measured as the aggregator runs in its Lambda: alone
in the process, batch after batch (the first 100,000 views of the workload). The second row is the same path measured
during the main run, where the simulated writers run between batches and evict the aggregator's working set from
the CPU caches. What changed to get here, from ~118 us per record first measured on this harness: the aggregator
reads only the four attributes it needs from the stream record's wire-format images instead of Powertools'
whole-image deserialization (`store.stream_image`, ~12 us saved), validates integers on a fast path, the batch fold
and outcomes build cheaper records (NamedTuples, an in-place fold), board shards are cached per item id, and
`apply_batch` applies items inline when `write_concurrency` is 1 (the in-memory store has no network latency to
overlap, so a thread pool only adds dispatch cost; in Lambda the pool stays). What remains is plain Python: ~3 us to
read and validate a record, ~1 us to fold it, ~4 us (6-7 us per distinct item) to plan and check the compare-and-set,
~1 us of Powertools' batch bookkeeping. The figure moves by +-20 % with the load of this shared 2-core machine.
Going under 10 us would mean dropping the per-record validation or Powertools' batch processor, which this project
keeps on purpose.
"""
