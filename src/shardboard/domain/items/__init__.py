"""Items: an item's record (its metadata document and status), which ids a reader drops because they are
taken down, and the newest items (GET /items?created_after=)."""
