"""Trending: a time-decayed view count kept as one more period kind (docs/trending.md).

Forward decay (Cormode et al., ICDE 2009): a view at time t adds 2^((t - L)/h) relative to a landmark L, h the
half-life, so a stored score only grows and every rule that relies on counts only growing (the sparse index, the
threshold gather, the compare-and-set) holds for it unchanged. The landmark moves on every *epoch* of
``HALF_LIVES_PER_EPOCH`` half-lives, before the numbers outgrow DynamoDB's 38 digits: the epoch is the period's
bucket, named by its landmark hour.

Weights are per anchor hour bucket and integers, W(k) = round(2^(P + k/h)) for the hour k hours after the landmark,
computed with integers only so that every process (aggregator, verify, a client) agrees to the last unit.
"""

from __future__ import annotations

import functools
from datetime import datetime

TRENDING = "trending"
DEFAULT_HALF_LIFE_HOURS = 6
# m: an epoch is m half-lives. The last hour's weight is ~2^(P + m): P + m = 60 bits, so 10^12 views of it stay
# below 10^31, far from DynamoDB's 10^38; and a score carried into the next epoch, floor(S / 2^m), keeps P bits.
HALF_LIVES_PER_EPOCH = 28
# P: the first hour of an epoch weighs 2^P, the precision a carried score keeps.
PRECISION_BITS = 32
# Past epochs stay readable this many epochs after they end (4 weeks at a 6-hour half-life): the read of an epoch
# merges the one before it.
TRENDING_RETENTION_EPOCHS = 4
# The half-lives a stack may choose: an epoch (28 half-lives) of 28 hours to 28 weeks.
MIN_HALF_LIFE_HOURS, MAX_HALF_LIFE_HOURS = 1, 168


class HalfLifeError(ValueError):
    """A half-life that is not a whole number of hours in the accepted range."""


def check_half_life(hours: int) -> int:
    if not MIN_HALF_LIFE_HOURS <= hours <= MAX_HALF_LIFE_HOURS:
        raise HalfLifeError(f"a half-life is {MIN_HALF_LIFE_HOURS} to {MAX_HALF_LIFE_HOURS} hours, not {hours}")
    return hours


def epoch_hours(half_life: int) -> int:
    """E = m x h: the hours of one epoch (7 days for a 6-hour half-life)."""
    return HALF_LIVES_PER_EPOCH * half_life


def weight(hour: int, half_life: int) -> int:
    """W(k) = round(2^(P + k/h)) for the anchor hour ``hour`` hours after its epoch's landmark (0 <= k < E)."""
    return weights(half_life)[hour]


@functools.cache
def weights(half_life: int) -> tuple[int, ...]:
    """The whole table of one epoch's weights, W(0) .. W(E - 1) (pure; built once per half-life)."""
    check_half_life(half_life)
    return tuple(_rounded_power(hour, half_life) for hour in range(epoch_hours(half_life)))


def _rounded_power(hour: int, half_life: int) -> int:
    """round(2^(P + k/h)) = round((2^(P h + k))^(1/h)), exactly: the integer h-th root r, then r + 1 when
    (r + 1/2)^h <= 2^(P h + k), that is (2r + 1)^h <= 2^(P h + k + h)."""
    exponent = PRECISION_BITS * half_life + hour
    root = _integer_root(1 << exponent, half_life)
    return root + 1 if (2 * root + 1) ** half_life <= 1 << (exponent + half_life) else root


def _integer_root(value: int, degree: int) -> int:
    """floor(value^(1/degree)) for value >= 1: Newton's method with integers, from a float's estimate just above
    the root (the roots here have about 60 bits, a float's estimate 52 good ones), then settled exactly."""
    guess = int(2.0 ** ((value.bit_length() - 1) / degree) * 2.0 ** (1 / degree) * (1 + 2**-40)) + 1
    while True:
        better = ((degree - 1) * guess + value // guess ** (degree - 1)) // degree
        if better >= guess:
            break
        guess = better
    while guess**degree > value:
        guess -= 1
    while (guess + 1) ** degree <= value:
        guess += 1
    return guess


def largest_score(views: int, half_life: int) -> int:
    """The score of ``views`` views all in an epoch's last hour: the largest a count of ``views`` can make."""
    return views * weights(half_life)[-1]


def carried_score(score: int) -> int:
    """An ended epoch's score in the units of the next: floor(S / 2^m) (a trending head adds it to the epoch's)."""
    return score >> HALF_LIVES_PER_EPOCH


def decayed(score: int, landmark: datetime, epoch_end: datetime, at: datetime) -> float:
    """A stored score as views now: each view weighs 2^-(its age / h), so a view at ``at`` counts 1 and one a
    half-life older 1/2. The half-life is the epoch's length over its 28 half-lives (a head carries its bounds)."""
    half_life = (epoch_end - landmark) / HALF_LIVES_PER_EPOCH
    return float(score) / float(2.0 ** (PRECISION_BITS + (at - landmark) / half_life))
