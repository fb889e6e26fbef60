"""The rate-limit allowance contract (docs/honest-counts.md "Rate limits") on every implementation of the base table:
a client's allowance admits views exactly up to its limit in a window, even under concurrent requests, a refusal
writes nothing, a return frees room, and allowance counters never count as views. Also the write units per view
with and without the limits, priced by the capacity emulator."""

from __future__ import annotations

import threading

from shardboard.adapters.keys import RATE_PREFIX
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.rate_limit import IP, VIEWER, RateLimits, allowances, within
from tests.contract.conftest import Ports, memory_ports

T = 1_794_999_990.0  # 30 s into a minute
BUCKET = "2026-11-23"


def ip_allowance(limit: int, views: int = 1, at: float = T, ip: str = "203.0.113.7"):
    (allowance,) = allowances(RateLimits(per_ip=limit), ip, None, views, at=at)
    return allowance


def rate_items(ports: Ports) -> dict[str, int]:
    """Every allowance counter (key -> views taken), read back from the implementation's own table."""
    if ports.name == "memory":
        items = list(ports.views.data.items.values())
    else:
        items = ports.views.client.scan(TableName=ports.views.table)["Items"]
    return {i["pk"]["S"]: int(i["used"]["N"]) for i in items if i["pk"]["S"].startswith(RATE_PREFIX)}


def test_an_allowance_admits_views_up_to_its_limit_then_refuses_and_writes_nothing(ports: Ports) -> None:
    assert [ports.views.take_allowance(ip_allowance(5, views=2)) for _ in range(3)] == [True, True, False]
    assert ports.views.take_allowance(ip_allowance(5, views=1))  # 4 + 1 = 5: exactly the limit
    before = rate_items(ports)
    assert not ports.views.take_allowance(ip_allowance(5, views=1))
    assert rate_items(ports) == before == {f"{RATE_PREFIX}{int(T // 60)}#ip#203.0.113.7": 5}


def test_a_returned_allowance_frees_room(ports: Ports) -> None:
    allowance = ip_allowance(2)
    assert ports.views.take_allowance(allowance) and ports.views.take_allowance(allowance)
    ports.views.return_allowance(allowance)
    assert ports.views.take_allowance(allowance)
    assert not ports.views.take_allowance(allowance)


def test_windows_kinds_and_clients_are_independent(ports: Ports) -> None:
    limits = RateLimits(per_ip=1, per_viewer=1)
    ip, viewer = allowances(limits, "2001:db8::1", "2001:db8::/64", 1, at=T)  # a viewer spelled like the IP's client
    assert (ip.kind, viewer.kind, ip.client) == (IP, VIEWER, viewer.client)
    assert ports.views.take_allowance(ip) and ports.views.take_allowance(viewer)
    assert ports.views.take_allowance(ip_allowance(1, at=T + 60))  # the next minute
    assert ports.views.take_allowance(ip_allowance(1, ip="198.51.100.1"))
    assert not ports.views.take_allowance(ip)
    assert len(rate_items(ports)) == 4


def test_concurrent_requests_of_one_client_are_admitted_exactly_up_to_the_limit(ports: Ports) -> None:
    barrier, admitted = threading.Barrier(8), []

    def one() -> None:
        barrier.wait()
        admitted.append(ports.views.take_allowance(ip_allowance(5)))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(admitted) == [False] * 3 + [True] * 5


def test_allowances_never_count_as_views(ports: Ports) -> None:
    limits = RateLimits(per_ip=2)
    for _ in range(2):
        with within(ports.views, allowances(limits, "203.0.113.7", None, 1, at=T)):
            ports.views.add_view("a", 0, 1, BUCKET)
    assert ports.views.scan_totals() == {"a": 2}
    assert [r["dynamodb"]["NewImage"]["views"]["N"] for r in ports.counter_records()] == ["1", "2"]


def write_units(ports: Ports, record) -> float:
    """Write units the emulator charged for ``record()``."""
    before = ports.views.data.emulator.usage.units("write")
    record()
    return float(ports.views.data.emulator.usage.units("write") - before)


def test_cost_per_view_with_and_without_the_limits() -> None:
    # Priced by the capacity emulator (DynamoDB's rules: 1 unit per KB written, failed conditions charged, twice
    # for each item of a transaction); moto reports no capacity for transactions, so this is not a contract case.
    ports, limits = memory_ports(), RateLimits(per_ip=2, per_viewer=2)

    def plain(at: float = T) -> None:
        with within(ports.views, allowances(limits, "203.0.113.7", None, 1, at=at)):
            ports.views.add_view("a", 0, 1, BUCKET)

    def viewed(viewer: str, ip: str = "198.51.100.1", at: float = T + 60) -> None:
        with within(ports.views, allowances(limits, ip, viewer, 1, at=at)):
            ports.views.add_seen_view("b", 0, Seen.of(viewer, 86_400, at=at), BUCKET)

    assert write_units(ports, lambda: ports.views.add_view("a", 0, 1, BUCKET)) == 1.0  # limits off
    assert write_units(ports, plain) == 2.0  # the IP's allowance + the counter
    assert write_units(ports, plain) == 2.0
    assert write_units(ports, lambda: _refused(plain)) == 1.0  # the failed condition on the allowance
    assert write_units(ports, lambda: viewed("u1")) == 6.0  # two allowances + the dedupe transaction (2 x 2)
    assert write_units(ports, lambda: viewed("u1")) == 4.0  # a duplicate: two allowances + the refused marker (2)
    assert write_units(ports, lambda: _refused(lambda: viewed("u2"))) == 1.0  # the IP's limit refuses first
    # From another IP the viewer's limit refuses after the IP's allowance was taken: take 1 + refused 1 + return 1
    assert write_units(ports, lambda: _refused(lambda: viewed("u1", ip="198.51.100.2"))) == 3.0
    assert ports.views.scan_totals() == {"a": 3, "b": 1}


def _refused(request) -> None:
    from shardboard.domain.writing.rate_limit import RateLimited

    try:
        request()
    except RateLimited:
        return
    raise AssertionError("the request was admitted")
