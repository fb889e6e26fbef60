"""Publishing, the snapshot job's rules: the threshold gather of the exact top N over S shards (gather), the
head it writes with the first P entries' metadata (snapshot, head_meta), the ranked versions of the top D,
the all-time deep tier below them, and refill, the sparse index's repair after takedowns."""
