"""Lambda entry points: each parses its event, calls one domain function and shapes the response."""
