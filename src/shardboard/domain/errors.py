"""The domain's refusal of bad input, in a module of its own so that any domain module may raise it: ``validation``
imports ``boards`` (the board-name rule and limits), and ``boards`` raises it (a board the policy refuses)."""

from __future__ import annotations


class BadInput(ValueError):
    """Input that is refused with a one-line reason (HTTP 400, CLI exit 2)."""
