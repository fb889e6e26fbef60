"""``shardboard serve``: the deployed HTTP API on 127.0.0.1, through the real handlers, with the pipeline behind it."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click
from botocore.credentials import ReadOnlyCredentials
from click.core import ParameterSource

from shardboard_tools.cli.common import RuntimeSource, errors, fail, one_line_errors, require_extra, runtime
from shardboard_tools.local.engine import LOCAL_CREDENTIALS, EngineError, local_engine
from shardboard_tools.local.gateway import Authorizer, security_schemes, template_routes
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.webapp import listen_error, port_refusal
from shardboard_tools.template import Template

if TYPE_CHECKING:
    from shardboard_tools.local.authorizers import TemplateAuthorizer

# `sam local start-api`'s port: a frontend pointed at the local API keeps its URL from one run to the next.
DEFAULT_PORT = 3000


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="0: a free one.")
@click.option(
    "--auth",
    type=click.Choice(["none", "iam", "jwt"]),
    default="none",
    show_default=True,
    help="Refuse what the deployed API refuses with WriteAuth=iam (SigV4) or jwt (-p 'Jwt=https://.. AUDIENCE'); "
    "sets WriteAuth (default: -p WriteAuth's value when given, else none).",
)
@click.option(
    "--jwks",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="--auth jwt: the issuer's keys (JWKS JSON) from a file instead of the issuer's discovery document.",
)
@click.option("--refresh", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="Snapshot every s.")
@click.pass_context
def serve(ctx: click.Context, port: int, auth: str, jwks: Path | None, refresh: float) -> None:
    """Serve every route template.yaml deploys on 127.0.0.1 through the real handlers, until Ctrl-C."""
    from shardboard_tools.local.serve import ServeOptions, describe, events_path, serving
    from shardboard_tools.local.stream_runner import default_state_dir

    taken = listen_error(port)
    if taken is not None:  # said before the engine and the tables take their seconds
        fail(port_refusal(port, taken), 2)
    auth = _one_auth(ctx, auth)
    rt = runtime(ctx, published=False)  # its own stack, in an engine of its own
    options = ServeOptions(port=port, refresh_seconds=refresh, state_dir=default_state_dir())
    # Read before the engine sets its own: the credentials a client in this environment signs with.
    authorizer, accepted = _authorizer(rt, auth, jwks)
    _stop_on_sigterm()
    # The engine, the tables and the runner take seconds: say so at once (stdout keeps the one line with the URL).
    click.echo("shardboard serve: starting the engine, the tables, the stream runner and the snapshots...", err=True)
    with one_line_errors():
        try:
            with (
                local_engine(announce=lambda notice: errors.print(notice, markup=False)) as engine,
                serving(rt, options, authorizer) as server,
            ):
                click.echo(describe(server, f"{engine.kind} at {engine.endpoint}", options, accepted))
                sys.stdout.flush()  # a pipe buffers it, and whoever waits for the URL waits for this line
                click.echo(f"shardboard serve: board events to {events_path(options)} (docs/events.md)", err=True)
                while engine.running:
                    time.sleep(0.5)
                fail(f"{engine.kind} stopped on its own")
        except EngineError as error:
            fail(str(error))
        except OSError as error:  # the port was taken since the check above
            fail(port_refusal(port, error), 2)
        except KeyboardInterrupt:
            pass
    _leave()


def _leave() -> None:
    """Exit now that the server, the pipeline and the engine are stopped (Ctrl-C, SIGTERM).

    A worker thread still inside a DynamoDB call (a snapshot's parallel queries on a hung endpoint) would hold a normal
    exit until botocore gives up, minutes later: concurrent.futures joins its workers at interpreter exit. What it was
    doing is cut off as Lambda's timeout cuts an invocation, and redone by the next run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


def _one_auth(ctx: click.Context, auth: str) -> str:
    """One auth configuration: ``--auth iam|jwt`` is the stack's ``WriteAuth`` (set here, before the template is read,
    so the routes' security and the authorizer agree); without ``--auth``, a ``-p WriteAuth`` chooses it. A ``-p
    WriteAuth`` that says otherwise than ``--auth`` exits 2."""
    root = ctx.find_root()
    given = (root.meta.get("parameters") or {}).get("WriteAuth")
    if ctx.get_parameter_source("auth") in {ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP} and given:
        auth = given
    elif auth != "none" and given not in {None, auth}:
        fail(f"--auth {auth} and -p WriteAuth={given} disagree: give one of them (--auth sets WriteAuth)", 2)
    if auth != "none" and isinstance(root.obj, RuntimeSource):
        root.obj = replace(root.obj, parameters={**root.obj.parameters, "WriteAuth": auth})
    return auth


def _authorizer(rt: Runtime, auth: str, jwks: Path | None) -> tuple[Authorizer | None, str]:
    """The authorizer for ``--auth`` and how the status line names it, over the template the routes come from."""
    if auth == "none":
        return None, "none"
    from shardboard_tools.local.authorizers import JwtCheck, SigV4Check, TemplateAuthorizer

    template = rt.template
    if template.parameters.get("WriteAuth") != auth:  # the runtime was built before --auth could set it
        fail(f"--auth {auth} and WriteAuth={template.parameters.get('WriteAuth')} disagree", 2)
    if auth == "iam":
        check = SigV4Check(*_signing_credentials())
        described = f"iam: SigV4 for execute-api with access key {check.credentials.access_key}"
        return _checked(TemplateAuthorizer(template, auth, sigv4=check), template), described
    require_extra("serve --auth jwt", "serve", "jwt")
    issuer, audiences = _jwt_configuration(template)
    try:
        jwt = JwtCheck.of(issuer, audiences, jwks)
    except (OSError, ValueError, KeyError) as error:
        fail(f"cannot read the issuer's keys ({jwks or issuer}): {error}", 2)
    described = f"jwt: issuer {issuer}, audience {','.join(audiences)}"
    return _checked(TemplateAuthorizer(template, auth, jwt=jwt), template), described


def _checked(authorizer: TemplateAuthorizer, template: Template) -> Authorizer:
    """The authorizer, or exit 2 when a route needs what it does not check (the routes' auth and --auth disagree)."""
    try:
        authorizer.check(template_routes(template))
    except ValueError as error:
        fail(f"--auth {authorizer.mode} cannot serve the template's routes: {error}", 2)
    return authorizer


def _jwt_configuration(template: Template) -> tuple[str, list[str]]:
    """The JWT authorizer's issuer and audiences, as the template deploys them (its Rules require both)."""
    for scheme in security_schemes(template).values():
        authorizer = scheme.get("x-amazon-apigateway-authorizer") or {}
        if authorizer.get("type") == "jwt":
            config = authorizer.get("jwtConfiguration") or {}
            issuer, audiences = str(config.get("issuer") or ""), [str(a) for a in config.get("audience") or [] if a]
            if not issuer or not audiences:
                fail("--auth jwt needs the issuer and audience: -p 'Jwt=https://... AUDIENCE'", 2)
            return issuer, audiences
    return fail("template.yaml has no JWT authorizer for --auth jwt", 2)


def _signing_credentials() -> tuple[ReadOnlyCredentials, str]:
    """This environment's credentials and region (botocore's chain), or the local ones every local command uses."""
    import botocore.session

    session = botocore.session.get_session()
    region = str(session.get_config_variable("region") or LOCAL_CREDENTIALS["AWS_REGION"])
    found = session.get_credentials()
    if found is None:
        key, secret = LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"], LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]
        return ReadOnlyCredentials(key, secret, None), region
    return found.get_frozen_credentials(), region


def _stop_on_sigterm() -> None:
    """SIGTERM (and SIGHUP) stop like Ctrl-C: the server, the schedules, the runner, then the engine."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)


COMMANDS = [serve]
