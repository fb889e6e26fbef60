"""The domain's refusal of bad input, in a module of its own so that any domain module may raise it (``validation``
imports the settings, which import domain modules)."""

from __future__ import annotations


class BadInput(ValueError):
    """Input that is refused with a one-line reason (HTTP 400, CLI exit 2)."""
