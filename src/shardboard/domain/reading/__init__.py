"""Reading a board past its head, from the snapshot head and its ranked version: ranks and percentiles
(GET /rank) and pages with a pinned cursor and around-me (GET /leaderboard?offset|cursor, GET /around)."""
