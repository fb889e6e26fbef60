"""The rate-limit rule (docs/honest-counts.md "Rate limits"), without any store: which allowances a request needs,
who the client of an address is, and that ``within`` spends a client's allowance only on views that were written."""

from __future__ import annotations

import pytest

from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.validation import BadInput
from shardboard.domain.writing.rate_limit import (
    ALLOWANCE_GRACE_SECONDS,
    IP,
    VIEWER,
    Allowance,
    RateLimited,
    RateLimits,
    allowances,
    ip_client,
    within,
)
from shardboard.settings import ConfigError, Settings

T = 1_794_999_990.5  # 30.5 s into a minute


class Counters:
    """Allowance counters in a dict, as the stores keep them: (kind, client, window) -> views taken."""

    def __init__(self, throttle_returns: bool = False) -> None:
        self.used: dict[tuple[str, str, int], int] = {}
        self.throttle_returns = throttle_returns

    def take_allowance(self, allowance: Allowance) -> bool:
        key = (allowance.kind, allowance.client, allowance.window)
        if self.used.get(key, 0) + allowance.views > allowance.limit:
            return False
        self.used[key] = self.used.get(key, 0) + allowance.views
        return True

    def return_allowance(self, allowance: Allowance) -> None:
        if self.throttle_returns:
            raise Throttled(ThrottleScope.TABLE)
        self.used[(allowance.kind, allowance.client, allowance.window)] -= allowance.views


def test_limits_that_are_off_need_no_allowance():
    assert allowances(RateLimits(), "203.0.113.7", "u1", at=T) == ()
    assert [a.kind for a in allowances(RateLimits(per_ip=5), "203.0.113.7", "u1", at=T)] == [IP]
    assert [a.kind for a in allowances(RateLimits(per_viewer=5), "203.0.113.7", "u1", at=T)] == [VIEWER]
    assert [a.kind for a in allowances(RateLimits(per_viewer=5), "203.0.113.7", None, at=T)] == []


def test_an_allowance_is_for_one_client_window_and_expires_after_it():
    ip, viewer = allowances(RateLimits(per_ip=120, per_viewer=30), "203.0.113.7", "u1", views=3, at=T)
    window = int(T // 60)
    assert ip == Allowance(IP, "203.0.113.7", window, 120, 3, (window + 1) * 60 + ALLOWANCE_GRACE_SECONDS, 30)
    assert (viewer.kind, viewer.client, viewer.limit, viewer.views) == (VIEWER, "u1", 30, 3)
    assert T % 60 == 30.5
    # Retry-After is the rest of the window, rounded up, at least one second
    (last,) = allowances(RateLimits(per_ip=1), "203.0.113.7", None, at=(window + 1) * 60 - 0.2)
    assert last.retry_after == 1


@pytest.mark.parametrize(
    ("source_ip", "client"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("192.168.0.1/32", "192.168.0.1"),  # sam's sample events write the source as a /32
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),  # an IPv6 subscriber's whole /64
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),  # an IPv4-mapped address is its IPv4 client
        ("not an address", "not an address"),
        (None, "unknown"),
        ("", "unknown"),
    ],
)
def test_the_client_of_an_address(source_ip, client):
    assert ip_client(source_ip) == client


def test_within_admits_exactly_the_limit_then_refuses_with_the_allowance():
    counters, limits = Counters(), RateLimits(per_ip=3)
    for _ in range(3):
        with within(counters, allowances(limits, "203.0.113.7", None, at=T)):
            pass
    with pytest.raises(RateLimited) as refused, within(counters, allowances(limits, "203.0.113.7", None, at=T)):
        pytest.fail("the body of a refused request must not run")
    assert refused.value.allowance.kind == IP
    assert counters.used == {(IP, "203.0.113.7", int(T // 60)): 3}
    # The next minute admits again; another address was never limited
    with within(counters, allowances(limits, "203.0.113.7", None, at=T + 60)):
        pass
    with within(counters, allowances(limits, "198.51.100.1", None, at=T)):
        pass


def test_a_view_that_was_not_written_gives_its_allowances_back():
    counters, limits = Counters(), RateLimits(per_ip=2, per_viewer=2)
    with pytest.raises(Throttled), within(counters, allowances(limits, "203.0.113.7", "u1", views=2, at=T)):
        raise Throttled(ThrottleScope.PARTITION)
    assert set(counters.used.values()) == {0}


def test_an_ip_allowance_taken_before_a_refused_viewer_is_given_back():
    counters, limits = Counters(), RateLimits(per_ip=10, per_viewer=1)
    with within(counters, allowances(limits, "203.0.113.7", "u1", at=T)):
        pass
    with pytest.raises(RateLimited) as refused, within(counters, allowances(limits, "203.0.113.7", "u1", at=T)):
        pass
    assert refused.value.allowance.kind == VIEWER
    assert counters.used[(IP, "203.0.113.7", int(T // 60))] == 1


def test_a_request_larger_than_the_limit_is_bad_input_before_any_write():
    # No window would ever admit it: a 429 would have the client retry for ever.
    with pytest.raises(BadInput, match="count 6 is more than the 5 views per ip per minute"):
        allowances(RateLimits(per_ip=5), "a", None, views=6, at=T)
    with pytest.raises(BadInput, match="per viewer"):
        allowances(RateLimits(per_ip=5, per_viewer=2), "a", "u1", views=3, at=T)


def test_a_failed_return_keeps_the_first_error():
    counters, limits = Counters(throttle_returns=True), RateLimits(per_ip=2)
    with pytest.raises(KeyError), within(counters, allowances(limits, "a", None, at=T)):
        raise KeyError("the view's own error")
    assert counters.used == {(IP, "a", int(T // 60)): 1}  # fewer views left for the client, never more


def test_settings_read_the_limits_and_refuse_negative_ones():
    settings = Settings.from_env({"VIEWS_PER_IP_PER_MINUTE": "120", "VIEWS_PER_VIEWER_PER_MINUTE": "0"})
    assert settings.rate_limits == RateLimits(per_ip=120, per_viewer=0)
    assert Settings().rate_limits == RateLimits()  # off unless the template turns them on
    with pytest.raises(ConfigError, match="views_per_ip_per_minute"):
        Settings.from_env({"VIEWS_PER_IP_PER_MINUTE": "-1"})
    with pytest.raises(ConfigError, match="VIEWS_PER_VIEWER_PER_MINUTE"):
        Settings.from_env({"VIEWS_PER_VIEWER_PER_MINUTE": "ten"})
