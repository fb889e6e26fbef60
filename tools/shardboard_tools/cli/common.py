"""What every ``shardboard`` command shares: the runtime, one-line errors and the console."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import click
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from shardboard.domain import validation
from shardboard.domain.items import UnknownItem
from shardboard.settings import ConfigError
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.template import TemplateError

console = Console()
errors = Console(stderr=True)


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
    except (validation.BadInput, UnknownItem, TemplateError, ConfigError) as error:
        fail(str(error), 2)
    except ClientError as error:
        info = error.response.get("Error", {})
        fail(f"DynamoDB said {info.get('Code')}: {info.get('Message')}")
    except BotoCoreError as error:
        fail(f"cannot reach DynamoDB: {error}{_endpoint_hint()}")


def _endpoint_hint() -> str:
    """Where the command looked: a new user most often meant a local engine and set no endpoint."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    if endpoint:
        return f" (AWS_ENDPOINT_URL_DYNAMODB={endpoint}: is the engine running? `shardboard local` starts one)"
    return (
        " (no AWS_ENDPOINT_URL_DYNAMODB: for DynamoDB Local, `shardboard local` starts one and prints the"
        " variables to export; for AWS, configure credentials)"
    )


def runtime(ctx: click.Context) -> Runtime:
    """The Runtime the ``shardboard`` group built from template.yaml and the environment."""
    obj = ctx.find_root().obj
    assert isinstance(obj, Runtime)
    return obj
