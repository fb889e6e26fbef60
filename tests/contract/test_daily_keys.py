"""Anonymous viewers' daily keys (DailyKeys) on every implementation: the first key stored for a day is every
caller's, and another day has its own (tests/integration/test_visitors.py checks the expiry TTL reads)."""

from __future__ import annotations

from tests.contract.conftest import Ports


def test_the_first_key_of_a_day_is_everyones(ports: Ports) -> None:
    first = ports.keys.daily_key("2026-11-23", b"\x01" * 32, 1_795_000_000)
    second = ports.keys.daily_key("2026-11-23", b"\x02" * 32, 1_795_999_999)
    tomorrow = ports.keys.daily_key("2026-11-24", b"\x03" * 32, 1_796_000_000)
    assert first == second == b"\x01" * 32
    assert tomorrow == b"\x03" * 32
