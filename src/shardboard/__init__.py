"""shardboard: exact top-N leaderboards on DynamoDB."""
