"""What every ``shardboard`` command shares: the runtime, one-line errors and the console.

Imported by the command group itself, so it stays light: the runtime (boto3, the handlers, template.yaml) is
imported and built by the first command that asks for it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console, ConsoleDimensions

from shardboard.domain import validation
from shardboard.domain.clock import Clock
from shardboard.domain.items.records import UnknownItem
from shardboard.services.clock import system_clock
from shardboard.settings import PUBLISHED_VARIABLES, ConfigError, Settings
from shardboard_tools.local.engine import LOCAL_CREDENTIALS

if TYPE_CHECKING:
    from shardboard_tools.local.runtime import Runtime

# Outside a terminal (a pipe, a file, a test runner) rich would wrap at 80 columns and split the ids and cursors a
# reader copies from the output: there, a line is as long as what it prints, unless COLUMNS asks for a width.
UNWRAPPED_WIDTH = 1_000_000


class Screen(Console):
    """rich's Console, never wrapping outside a terminal."""

    def __init__(self, *, width: int | None = None, stderr: bool = False) -> None:
        super().__init__(width=width, stderr=stderr)
        # rich fixes COLUMNS as a width when the console is built (at import): read it when a command prints instead
        self._width = width

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self.is_terminal or self._width is not None or self._environ.get("COLUMNS", "").isdigit():
            return measured
        return ConsoleDimensions(UNWRAPPED_WIDTH, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = Screen()
errors = Screen(stderr=True)


def fail(reason: str, code: int = 1) -> NoReturn:
    """Exit non-zero with a one-line reason."""
    errors.print(f"shardboard: {reason}", markup=False, highlight=False, soft_wrap=True)  # one line, never wrapped
    sys.exit(code)


def require_extra(command: str, extra: str, *modules: str) -> None:
    """Exit 2 with the pip line to run when an optional dependency of ``command`` is not installed."""
    if any(importlib.util.find_spec(module) is None for module in modules):
        fail(f"`shardboard {command}` needs the {extra} extra: pip install 'shardboard[{extra}]'", 2)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn expected failures into one line on stderr instead of a traceback (bad input exits 2)."""
    try:
        yield
    except ClientError as error:
        info = error.response.get("Error", {})
        fail(f"DynamoDB said {info.get('Code')}: {info.get('Message')}")
    except BotoCoreError as error:
        fail(f"cannot reach DynamoDB: {error}{_endpoint_hint()}")
    except Exception as error:
        if not isinstance(error, _bad_input()):
            raise
        fail(str(error), 2)


def _bad_input() -> tuple[type[Exception], ...]:
    """The errors that mean the input was wrong; template.yaml's is imported on demand (its module loads boto3)."""
    from shardboard_tools.template import TemplateError

    return (validation.BadInput, UnknownItem, TemplateError, ConfigError)


def _endpoint_hint() -> str:
    """Where the command looked: a new user most often meant a local engine and set no endpoint."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    if endpoint:
        return f" (AWS_ENDPOINT_URL_DYNAMODB={endpoint}: is the engine running? `shardboard local` starts one)"
    return (
        " (no AWS_ENDPOINT_URL_DYNAMODB: for DynamoDB Local, `shardboard local` starts one and prints the"
        " variables to export; for AWS, configure credentials)"
    )


@dataclass(frozen=True)
class RuntimeSource:
    """What the ``shardboard`` group's options name: the template, its overrides and the stack."""

    template_path: Path | None
    parameters: Mapping[str, str]
    stack: str
    clock: Clock = system_clock


def runtime(ctx: click.Context, *, published: bool = True) -> Runtime:
    """The Runtime of this invocation, built from template.yaml, ``-p`` and the environment on the first call.

    With ``published`` (every command against an existing stack) its settings are then the ones the stack published
    at its deploy or `shardboard init` (one GetItem, the first time a command asks), except those a ``-p`` or an
    environment variable sets. Commands that make a stack of their own in a fresh engine (demo, serve) pass False.
    """
    from shardboard_tools.local.runtime import Runtime

    root = ctx.find_root()
    if isinstance(root.obj, RuntimeSource):
        source = root.obj
        with one_line_errors():
            root.obj = Runtime.from_template(source.template_path, source.parameters, source.stack, source.clock)
    rt = root.obj
    assert isinstance(rt, Runtime)
    if published and not root.meta.get(_PUBLISHED_READ):
        root.meta[_PUBLISHED_READ] = True
        with one_line_errors():
            rt.settings = stack_settings(rt, root.meta.get("parameters") or {})
    return rt


_PUBLISHED_READ = "shardboard.published_settings_read"


def stack_settings(rt: Runtime, parameters: Mapping[str, str]) -> Settings:
    """``rt``'s settings under what its stack published; the template's (with a one-line warning on stderr) when the
    stack published nothing. A stack whose tables do not exist yet (before `init`) is not warned about: the command
    creates them, or fails on them with DynamoDB's own error."""
    from shardboard.services.stack import published_settings

    explicit = rt.template.variables_of(parameters) | {name for name in os.environ if name in PUBLISHED_VARIABLES}
    settings, lookup = published_settings(rt.dynamodb, rt.settings, keep=explicit)
    if lookup.published is None and not lookup.table_missing:
        warn(f"stack {rt.template.stack}: {lookup.why_not}; using the template's settings and -p")
    return settings


def warn(reason: str) -> None:
    """One line on stderr; the command goes on."""
    errors.print(f"shardboard: warning: {reason}", markup=False, highlight=False, soft_wrap=True)


def use_local_credentials_if_needed() -> None:
    """Pointed at an endpoint of its own with no credentials in the environment, sign with the local engine's.

    DynamoDB Local keeps one database per access key id and region: every command uses the same ones, as the
    library does against a local endpoint (``shardboard.adapters.dynamodb.LOCAL_ACCESS_KEY``).
    """
    if os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL"):
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
            os.environ.setdefault(name, LOCAL_CREDENTIALS[name])
