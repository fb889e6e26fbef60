"""The retried-writes contract (docs/honest-counts.md, "Retried writes") on every implementation of the base table:
an Idempotency-Key counts once for its retention and answers a retry as the first request was; a writer's numbered
write counts once however often it is sent; neither marker nor registry ever counts as a view. Also the write units
of each, priced by the capacity emulator."""

from __future__ import annotations

import threading

import pytest

from shardboard.adapters.keys import IDEMPOTENCY_PREFIX, PK, writer_attr
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.idempotency import (
    IDEMPOTENCY_KEY_SECONDS,
    Answer,
    IdempotencyKeyReused,
    KeyedRequest,
    OnceWrite,
    fingerprint,
)
from tests.contract.conftest import Ports, memory_ports

T = 1_795_000_000
DAY = 86_400
BUCKET = "2026-11-23"


def keyed(key: str, item: str = "a", count: int = 1, at: float = T, viewer: str | None = None) -> KeyedRequest:
    return KeyedRequest.of(key, fingerprint(item, count, (), viewer), at=at)


def items_of(ports: Ports) -> list[dict]:
    if ports.name == "memory":
        return list(ports.views.data.items.values())
    return ports.views.client.scan(TableName=ports.views.table, ConsistentRead=True)["Items"]


def test_a_key_counts_once_and_a_retry_is_answered_as_the_first_request_was(ports: Ports) -> None:
    first = ports.views.add_keyed_view("a", 0, 3, keyed("k1", count=3), bucket=BUCKET)
    retried = ports.views.add_keyed_view("a", 5, 3, keyed("k1", count=3, at=T + 60), bucket=BUCKET)  # another shard
    other = ports.views.add_keyed_view("a", 0, 2, keyed("k2", count=2), bucket=BUCKET, boards=("cats",))
    assert (first.answer, first.replayed) == (Answer.COUNTED, False)
    assert (retried.answer, retried.replayed) == (Answer.COUNTED, True)
    assert (other.answer, other.replayed) == (Answer.COUNTED, False)
    assert ports.views.scan_totals() == {"a": 5}
    assert ports.views.counters("a", [(BUCKET, 0)]) == {(BUCKET, 0): {"global": 5, "cats": 2}}
    # the counter records on the stream: 0 -> 3 -> 5 on shard 0, the markers are not counter records
    assert [r["dynamodb"]["NewImage"]["views"]["N"] for r in ports.counter_records()] == ["3", "5"]
    markers = sorted(i[PK]["S"] for i in items_of(ports) if i[PK]["S"].startswith(IDEMPOTENCY_PREFIX))
    assert markers == ["idem#k1", "idem#k2"]


def test_a_key_reused_by_another_request_is_refused_and_writes_nothing(ports: Ports) -> None:
    ports.views.add_keyed_view("a", 0, 1, keyed("k1"), bucket=BUCKET)
    before = items_of(ports)
    for item, count in (("a", 2), ("b", 1)):
        with pytest.raises(IdempotencyKeyReused, match="k1"):
            ports.views.add_keyed_view(item, 0, count, keyed("k1", item, count), bucket=BUCKET)
    assert sorted(map(str, items_of(ports))) == sorted(map(str, before))
    assert ports.views.scan_totals() == {"a": 1}


def test_a_key_is_kept_for_its_retention_then_it_is_a_new_request(ports: Ports) -> None:
    ports.views.add_keyed_view("a", 0, 1, keyed("k1"), bucket=BUCKET)
    last = ports.views.add_keyed_view("a", 0, 1, keyed("k1", at=T + IDEMPOTENCY_KEY_SECONDS), bucket=BUCKET)
    after = ports.views.add_keyed_view("a", 0, 1, keyed("k1", at=T + IDEMPOTENCY_KEY_SECONDS + 1), bucket=BUCKET)
    assert (last.replayed, after.replayed) == (True, False)
    assert ports.views.scan_totals() == {"a": 2}


def test_with_a_viewer_the_key_remembers_a_duplicate_answer(ports: Ports) -> None:
    seen = Seen.of("u1", DAY, at=T)
    counted = ports.views.add_keyed_view("a", 0, 1, keyed("k1", viewer="u1"), seen=seen, bucket=BUCKET)
    again = Seen.of("u1", DAY, at=T + 1)  # the same viewer, a new request (its own token and key)
    duplicate = ports.views.add_keyed_view("a", 1, 1, keyed("k2", viewer="u1"), seen=again, bucket=BUCKET)
    # the retry of k2 comes in the next dedupe window: the key, not the window, answers it
    later = Seen.of("u1", DAY, at=T + DAY)
    retried = ports.views.add_keyed_view("a", 2, 1, keyed("k2", viewer="u1", at=T + DAY), seen=later, bucket=BUCKET)
    assert [(o.answer, o.replayed) for o in (counted, duplicate, retried)] == [
        (Answer.COUNTED, False),
        (Answer.DUPLICATE, False),
        (Answer.DUPLICATE, True),
    ]
    assert ports.views.scan_totals() == {"a": 1}


def test_concurrent_attempts_of_one_key_count_once(ports: Ports) -> None:
    barrier, outcomes = threading.Barrier(6), []

    def one(shard: int) -> None:
        barrier.wait()
        outcomes.append(ports.views.add_keyed_view("hot", shard, 2, keyed("k1", "hot", 2), bucket=BUCKET))

    threads = [threading.Thread(target=one, args=(shard,)) for shard in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(o.replayed for o in outcomes) == [False] + [True] * 5
    assert {o.answer for o in outcomes} == {Answer.COUNTED}
    assert ports.views.scan_totals() == {"hot": 2}


def test_writer_numbers_are_never_handed_out_twice(ports: Ports) -> None:
    numbers: list[int] = []
    lock = threading.Lock()

    def claim() -> None:
        for _ in range(5):
            number = ports.views.claim_writer()
            with lock:
                numbers.append(number)

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(numbers) == list(range(1, 21))
    assert ports.views.scan_totals() == {}  # the registry is no counter


def test_a_numbered_write_counts_once_however_often_it_is_sent(ports: Ports) -> None:
    writer = ports.views.claim_writer()
    first = ports.views.add_view_once("a", 3, 5, OnceWrite(writer, 1), bucket=BUCKET, boards=("cats",))
    resent = ports.views.add_view_once("a", 3, 5, OnceWrite(writer, 1), bucket=BUCKET, boards=("cats",))
    # another writer on the same counter item, between a lost response and its retry, changes nothing of ours
    other = ports.views.claim_writer()
    theirs = ports.views.add_view_once("a", 3, 2, OnceWrite(other, 1), bucket=BUCKET)
    late = ports.views.add_view_once("a", 3, 5, OnceWrite(writer, 1), bucket=BUCKET, boards=("cats",))
    nxt = ports.views.add_view_once("a", 3, 1, OnceWrite(writer, 2), bucket=BUCKET)
    # a delayed copy of an older write arriving after a newer one is refused too
    delayed = ports.views.add_view_once("a", 3, 5, OnceWrite(writer, 1), bucket=BUCKET, boards=("cats",))
    assert [o.applied_now for o in (first, resent, theirs, late, nxt, delayed)] == [
        True,
        False,
        True,
        False,
        True,
        False,
    ]
    assert ports.views.counters("a", [(BUCKET, 3)]) == {(BUCKET, 3): {"global": 8, "cats": 5}}
    assert ports.views.scan_totals() == {"a": 8}
    (counter,) = [i for i in items_of(ports) if i[PK]["S"].startswith("view#")]
    assert (counter[writer_attr(writer)]["N"], counter[writer_attr(other)]["N"]) == ("2", "1")
    assert [r["dynamodb"]["NewImage"]["views"]["N"] for r in ports.counter_records()] == ["5", "7", "8"]


def test_write_units_of_plain_keyed_and_numbered_writes() -> None:
    # Priced by the capacity emulator (DynamoDB's rules: items under 1 KB, transactions twice per item, a failed
    # condition charged): moto reports no ConsumedCapacity for transactions, so this is not a contract case.
    views = memory_ports().views
    writer = views.claim_writer()
    plain = views.add_view("a", 0, 1, BUCKET)
    once = views.add_view_once("a", 1, 1, OnceWrite(writer, 1), bucket=BUCKET)
    once_again = views.add_view_once("a", 1, 1, OnceWrite(writer, 1), bucket=BUCKET)
    key = views.add_keyed_view("a", 2, 1, keyed("k1"), bucket=BUCKET)
    replay = views.add_keyed_view("a", 2, 1, keyed("k1"), bucket=BUCKET)
    seen = views.add_keyed_view("a", 2, 1, keyed("k2", viewer="u1"), seen=Seen.of("u1", DAY, at=T), bucket=BUCKET)
    duplicate = views.add_keyed_view("a", 2, 1, keyed("k3", viewer="u1"), seen=Seen.of("u1", DAY, at=T), bucket=BUCKET)
    assert (plain, once.units, once_again.units) == (1.0, 1.0, 1.0)
    assert (key.units, replay.units) == (4.0, 2.0)  # marker + counter in one transaction; the marker's check
    assert seen.units == 6.0  # key marker + viewer marker + counter, transactional
    assert duplicate.units == 3.0  # the viewer marker's check (2) + the key's marker keeping the answer (1)
