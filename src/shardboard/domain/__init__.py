"""The domain core: what a view, an aggregate and a leaderboard are, free of AWS plumbing."""
