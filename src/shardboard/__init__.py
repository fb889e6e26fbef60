"""shardboard: exact top-N leaderboards on DynamoDB."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("shardboard")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
