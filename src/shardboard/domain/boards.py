"""Boards: the global board every view counts on, the category boards a view names, and the policy that bounds them.

A stack's board policy (the template's ``Boards`` parameter, ``Settings.board_policy``) says which category boards
writers may create: at most ``max`` distinct boards in all, each registered once, the first time a view names it,
in a small registry (the shards table); with ``pattern``, only names that match it. Every way a view comes in
(``POST /views``, the CLI's ``record`` and ``import``, the library's Recorder) asks one :class:`BoardGate` before
anything is written, and a board it refuses raises :class:`BoardNotAllowed`, a BadInput.

Why a cap: a base counter item holds one ``b:<board>`` counter per board its item was viewed under (in that write
shard and anchor bucket), and every board adds periods for the snapshot job to refresh. Capped boards cap both: the
largest base counter is ``COUNTER_FIXED_BYTES + max x BOARD_COUNTER_BYTES`` (docs/boards-and-periods.md).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from shardboard.domain.errors import BadInput

GLOBAL_BOARD = "global"
# A board name: 1-64 of [a-z0-9_.:-] ("cats", "user:123"); no '#', so keys that embed it stay unambiguous.
BOARD_NAME_MAX = 64
BOARD_NAME = re.compile(rf"[a-z0-9_.:-]{{1,{BOARD_NAME_MAX}}}")
# Crawlers' views count here and on bots:<board> instead of the boards they name (domain/writing/visitors.py): names
# no writer may give.
BOTS_BOARD = "bots"
BOTS_PREFIX = "bots:"


def is_reserved(name: str) -> bool:
    """Whether ``name`` is a board only the stack writes: ``bots`` and ``bots:<board>``."""
    return name == BOTS_BOARD or name.startswith(BOTS_PREFIX)


MAX_BOARDS_PER_VIEW = 8

# The template's Boards default: open to writers, up to 1,000 distinct category boards.
DEFAULT_MAX_BOARDS = 1_000
DEFAULT_BOARD_POLICY = f"max={DEFAULT_MAX_BOARDS}"
# What one base counter item can hold, in DynamoDB's item size (attribute names plus values): a board's counter is
# "b:" + a 64-character name + a number of at most 38 digits (20 bytes); the rest (pk, item_id of 512 bytes, shard,
# bucket, views, import_id) is at most 1,187 bytes (tests/unit/test_board_policy.py builds that item).
BOARD_COUNTER_BYTES = 2 + 64 + 20
COUNTER_FIXED_BYTES = 1_187
# The largest cap a policy may set: 2,000 boards keep a base counter under 170 KB, far from DynamoDB's 400 KB.
MAX_BOARDS_CEILING = 2_000
ITEM_SIZE_LIMIT = 400 * 1024
# Names one registration writes at once: a transaction holds at most 100 items (the names and the count).
MAX_REGISTERED_AT_ONCE = 99
# A writer remembers a full registry, and the names it refused, this long (no registry write, or read, for them
# meanwhile): boards are never unregistered, and a cap is raised by a deploy, which starts new containers anyway.
REFUSED_TTL_SECONDS = 60.0
REFUSED_CACHE_SIZE = 10_000

# The Boards parameter: "max=N", optionally followed by " pattern=GLOB|GLOB|..." (template.yaml's AllowedPattern
# says the same, so a deploy can never hand the functions a policy they cannot read).
_GLOB = r"[a-z0-9_.:*-]+"
BOARD_POLICY = re.compile(rf"max=(?P<max>[0-9]{{1,4}})(?: pattern=(?P<pattern>{_GLOB}(?:\|{_GLOB})*))?")


def largest_counter_bytes(boards: int) -> int:
    """The largest a base counter item can be with ``boards`` category boards (DynamoDB's item size)."""
    return COUNTER_FIXED_BYTES + boards * BOARD_COUNTER_BYTES


class BoardNotAllowed(BadInput):
    """A category board the stack's board policy refuses (HTTP 422 board_not_allowed, CLI exit 2, the library's
    BadInput): nothing was written."""


class BoardPolicyError(ValueError):
    """A board policy that does not parse (a deployment's Boards parameter)."""


@dataclass(frozen=True)
class BoardPolicy:
    """Which category boards writers may create: at most ``max_boards`` distinct ones and, with a ``pattern``, only
    names it allows: globs separated by ``|``, where ``*`` stands for any run of characters (``cats|dogs|tag:*``)."""

    max_boards: int = DEFAULT_MAX_BOARDS
    pattern: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_boards, bool) or not 0 <= self.max_boards <= MAX_BOARDS_CEILING:
            raise BoardPolicyError(f"max must be from 0 to {MAX_BOARDS_CEILING}, got {self.max_boards!r}")
        if self.pattern is not None and not re.fullmatch(rf"{_GLOB}(?:\|{_GLOB})*", self.pattern):
            raise BoardPolicyError(
                f"pattern must be globs of a-z 0-9 _ . : - and * separated by '|', got {self.pattern!r}"
            )

    @classmethod
    def parse(cls, text: str) -> BoardPolicy:
        """``max=N`` (0 to 2,000), optionally followed by `` pattern=GLOB|GLOB...``: ``max=100 pattern=cats|tag:*``."""
        matched = BOARD_POLICY.fullmatch(text)
        if matched is None:
            raise BoardPolicyError(f"expected max=N or max=N pattern=GLOB|GLOB..., got {text!r}")
        return cls(int(matched["max"]), matched["pattern"])

    def __str__(self) -> str:
        return f"max={self.max_boards}" + (f" pattern={self.pattern}" if self.pattern is not None else "")

    @cached_property
    def _compiled(self) -> re.Pattern[str] | None:
        if self.pattern is None:
            return None
        globs = ("[a-z0-9_.:-]*".join(re.escape(part) for part in glob.split("*")) for glob in self.pattern.split("|"))
        return re.compile("|".join(f"(?:{glob})" for glob in globs))

    def allows(self, name: str) -> bool:
        """Whether the pattern (if any) allows ``name``."""
        return self._compiled is None or self._compiled.fullmatch(name) is not None

    def named(self, name: str) -> None:
        """Raise BoardNotAllowed unless the pattern (if any) allows ``name``; every board, old or new, must match."""
        if not self.allows(name):
            raise BoardNotAllowed(f"board {name!r} is not allowed: this stack's boards must match {self.pattern}")

    @property
    def largest_counter_bytes(self) -> int:
        """The bound on a base counter item this policy keeps (boards registered before it aside)."""
        return largest_counter_bytes(self.max_boards)


class BoardRegistry(Protocol):
    """The registry of a stack's category boards (adapters/board_registry.py on DynamoDB, InProcessBoards here)."""

    def registered(self, names: Sequence[str]) -> set[str]:
        """Which of ``names`` are registered (a strongly consistent read)."""
        ...

    def register(self, names: Sequence[str], limit: int | None) -> bool:
        """Register every one of ``names`` (at most MAX_REGISTERED_AT_ONCE) not registered yet, all at once, unless
        that would take the number registered past ``limit`` (None: no limit): False then, and nothing written."""
        ...

    def existed(self, names: Sequence[str]) -> set[str]:
        """Which of ``names`` already hold views (boards their stack had before it had a registry)."""
        ...

    def count(self) -> int:
        """How many boards are registered."""
        ...

    def scan(self) -> dict[str, str]:
        """Every registered board and its origin: ``view`` (a view registered it under the cap) or ``existing``
        (it held views from before and was learned past the cap)."""
        ...


@dataclass
class InProcessBoards:
    """A registry in this process's memory: a Recorder on in-memory stores, and the reference the DynamoDB registry
    is tested against. ``existing``: boards that hold views from before (learned past the cap, like the real one)."""

    existing: frozenset[str] = frozenset()
    names: set[str] = field(default_factory=set)
    origins: dict[str, str] = field(default_factory=dict)  # as the registry's items hold them
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def registered(self, names: Sequence[str]) -> set[str]:
        with self._lock:
            return {name for name in names if name in self.names}

    def register(self, names: Sequence[str], limit: int | None) -> bool:
        with self._lock:
            new = set(names) - self.names
            if limit is not None and len(self.names) + len(new) > limit:
                return False
            self.names |= new
            self.origins |= dict.fromkeys(sorted(new), "view" if limit is not None else "existing")
            return True

    def existed(self, names: Sequence[str]) -> set[str]:
        return {name for name in names if name in self.existing}

    def count(self) -> int:
        with self._lock:
            return len(self.names)

    def scan(self) -> dict[str, str]:
        with self._lock:
            return {name: self.origins.get(name, "view") for name in self.names}


class BoardGate:
    """A stack's board policy, enforced: every view's category boards pass through :meth:`admit` before anything
    is written. A board registered already costs nothing (a writer remembers the boards it saw registered); a new
    one is registered in one transaction with the count it is capped by; a board the cap refuses but that already
    holds views (its stack is older than the policy) is learned without counting against the cap, so boards that
    existed keep working. One gate per process (a Lambda container, a Recorder), shared by its threads."""

    def __init__(
        self,
        policy: BoardPolicy,
        registry: BoardRegistry,
        *,
        refused_ttl: float = REFUSED_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,  # a TTL's age, not a time of day
    ) -> None:
        self.policy = policy
        self.registry = registry
        self._refused_ttl = refused_ttl
        self._clock = clock
        self._known: set[str] = set()
        self._refused: OrderedDict[str, float] = OrderedDict()
        self._full_until = float("-inf")  # the registry refused a registration: it is full until a deploy
        self._lock = threading.Lock()

    def admit(self, names: Sequence[str]) -> tuple[str, ...]:
        """``names`` (valid board names, as ``validation.boards`` returns them) if the policy allows every one:
        registered now if new. Raises BoardNotAllowed if one is refused, having registered none of them (of at most
        MAX_REGISTERED_AT_ONCE names)."""
        names = tuple(names)
        for name in names:
            self.policy.named(name)
        new = self._unknown(names)
        if not new:
            return names
        self._refuse_remembered(new)
        found = self._learn(self.registry.registered(new))
        new = [name for name in new if name not in found]
        for start in range(0, len(new), MAX_REGISTERED_AT_ONCE):
            chunk = new[start : start + MAX_REGISTERED_AT_ONCE]
            if self._registered_under_cap(chunk):
                continue
            # Past the cap: boards that hold views from before the policy are kept (learned outside the cap), as
            # long as the view names no other new board; otherwise it is refused and nothing is registered.
            older = self.registry.existed(chunk)
            fresh = [name for name in chunk if name not in older]
            if fresh:
                if self._clock() < self._full_until:  # full for good (boards are never unregistered): remember
                    self._remember_refused(fresh)
                raise BoardNotAllowed(self._full(fresh[0]))
            self.registry.register(chunk, None)
            self._learn(chunk)
        return names

    def refusals(self, names: Iterable[str]) -> dict[str, str]:
        """Which of ``names`` :meth:`admit` would refuse now, and why, were they admitted one at a time in this order
        (as ``shardboard import`` does), writing nothing: the boards outside the pattern, and the new boards past
        the room left under the cap that hold no views yet."""
        reasons: dict[str, str] = {}
        candidates = []
        for name in dict.fromkeys(names):
            try:
                self.policy.named(name)
            except BoardNotAllowed as refused:
                reasons[name] = str(refused)
                continue
            candidates.append(name)
        new = self._unknown(candidates)
        found = self._learn(self.registry.registered(new)) if new else set()
        new = [name for name in new if name not in found]
        # In order, the first new boards take the room left (boards learned past the cap may have used it all).
        room = max(0, self.policy.max_boards - self.registry.count()) if new else 0
        past = new[room:]
        older = self.registry.existed(past) if past else set()
        reasons.update({name: self._full(name) for name in past if name not in older})
        return reasons

    def _registered_under_cap(self, names: Sequence[str]) -> bool:
        """Register ``names`` (all or none) if they fit under the cap; remember a full registry for a while, so a
        stream of new names costs no refused transaction each."""
        if self._clock() < self._full_until:
            return False
        if self.registry.register(names, self.policy.max_boards):
            self._learn(names)
            return True
        if self.registry.count() >= self.policy.max_boards:
            self._full_until = self._clock() + self._refused_ttl
        return False

    def _unknown(self, names: Iterable[str]) -> list[str]:
        with self._lock:
            return [name for name in names if name not in self._known]

    def _learn(self, names: Iterable[str]) -> set[str]:
        learned = set(names)
        with self._lock:
            self._known |= learned
        return learned

    def _refuse_remembered(self, names: Sequence[str]) -> None:
        now = self._clock()
        with self._lock:
            for name in names:
                until = self._refused.get(name)
                if until is not None and until > now:
                    raise BoardNotAllowed(self._full(name))

    def _remember_refused(self, names: Sequence[str]) -> None:
        until = self._clock() + self._refused_ttl
        with self._lock:
            for name in names:
                self._refused[name] = until
                self._refused.move_to_end(name)
            while len(self._refused) > REFUSED_CACHE_SIZE:
                self._refused.popitem(last=False)

    def _full(self, name: str) -> str:
        if self.policy.max_boards == 0:
            return f"board {name!r} is not allowed: this stack's writers create no boards (Boards {self.policy})"
        return (
            f"board {name!r} is not allowed: it would be a new board past this stack's maximum of"
            f" {self.policy.max_boards} (Boards {self.policy})"
        )
