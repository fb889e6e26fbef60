"""Fault injection and the chaos run: how shardboard proves it loses and double counts nothing."""
