"""Writing a view: the counter's write on a random write shard (recording), how many write shards a hot item
gets (dynamic sharding), and what makes a retried request or a repeat viewer count once (idempotency,
dedupe) and a flood wait (rate_limit)."""
