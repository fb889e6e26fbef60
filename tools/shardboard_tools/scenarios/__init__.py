"""Scenarios that run the real domain code on the capacity emulator in virtual time (`shardboard bench --scenario`)."""
