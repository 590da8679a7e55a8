"""A small test client for ``hermes pi``: the real process over real stdio.

:class:`PiProcess` spawns ``hermes-pi --mode rpc``, reads stdout on a thread (split on LF only, as
pi's clients do), matches responses to commands by id and keeps every record in arrival order.
Every line on stdout must be a JSON object: anything else is recorded as a protocol violation and
fails the test at close.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.timing import scaled

BIN_DIR = Path(sys.executable).parent
HERMES_PI = str(BIN_DIR / "hermes-pi")
_SCRUB = ("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "PI_")

Record = dict[str, Any]


def pi_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment with ``HERMES_HOME=home`` and nothing Hermes-related inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.pop("PYTHONPATH", None)
    env["HERMES_HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env.update(extra or {})
    return env


def write_config(home: Path, text: str = 'model = "mock:script"\n') -> Path:
    """Write ``config.toml`` into ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _loads(line: bytes) -> Any:
    """Decode a record; a deep one (``get_tree`` of a long session) with a raised recursion limit."""
    try:
        return json.loads(line)
    except RecursionError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 100_000))
        try:
            return json.loads(line)
        finally:
            sys.setrecursionlimit(limit)


class CommandFailed(Exception):
    """A ``success: false`` response; ``error`` is its message."""

    def __init__(self, response: Record) -> None:
        super().__init__(response.get("error"))
        self.response = response
        self.error = response.get("error")


class PiProcess:
    """``hermes-pi --mode rpc`` as a subprocess.

    :param home: the ``HERMES_HOME``.
    :param args: extra arguments after ``--mode rpc``.
    :param cwd: the working directory (the session's workspace).
    :param env: extra environment variables.
    """

    def __init__(
        self,
        home: Path,
        args: Sequence[str] = (),
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        self.stderr_path = home / f"pi-stderr-{time.monotonic_ns()}.log"
        self._stderr = self.stderr_path.open("wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [HERMES_PI, "--mode", "rpc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=pi_env(home, env),
            cwd=str(cwd),
        )
        self.cond = threading.Condition()
        self.records: list[Record] = []
        self.responses: dict[Any, Record] = {}
        self.violations: list[bytes] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        buffer = b""
        try:
            while chunk := self.proc.stdout.read1(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._take(line)
        except (ValueError, OSError):
            pass
        if buffer:
            self._take(buffer)
        with self.cond:
            self.cond.notify_all()

    def _take(self, line: bytes) -> None:
        try:
            record = _loads(line)
        except ValueError:
            record = None
        with self.cond:
            if not isinstance(record, dict):
                self.violations.append(line)
            else:
                self.records.append(record)
                if record.get("type") == "response" and "id" in record:
                    self.responses[record["id"]] = record
            self.cond.notify_all()

    # -- sending ------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        """Write bytes to stdin as they are."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, record: Mapping[str, Any]) -> None:
        """Write one record (JSON plus LF)."""
        self.send_raw(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")

    def start(self, type_: str, **fields: Any) -> str:
        """Send a command and return its id without waiting."""
        command_id = f"c{next(self._ids)}"
        self.send({"id": command_id, "type": type_, **fields})
        return command_id

    def response(self, command_id: str, timeout: float = 20) -> Record:
        """Wait for the response to a command."""
        result: Record = self.wait(
            lambda: self.responses.get(command_id), timeout, f"the response to {command_id}"
        )
        return result

    def call(self, type_: str, timeout: float = 20, **fields: Any) -> Any:
        """Send a command and return its ``data``; raise :class:`CommandFailed` on failure."""
        response = self.response(self.start(type_, **fields), timeout)
        if not response["success"]:
            raise CommandFailed(response)
        return response.get("data")

    def fail(self, type_: str, timeout: float = 20, **fields: Any) -> str:
        """Send a command that must fail and return its error message."""
        response = self.response(self.start(type_, **fields), timeout)
        assert response["success"] is False, response
        assert isinstance(response["error"], str) and response["error"], response
        return str(response["error"])

    # -- records ------------------------------------------------------------------------------
    def wait(self, predicate: Callable[[], Any], timeout: float = 20, what: str = "the condition") -> Any:
        """Wait until ``predicate()`` is truthy (the timeout is scaled)."""
        deadline = time.monotonic() + scaled(timeout)
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what} did not happen in time; stderr: {self.stderr()[-2000:]}")
                self.cond.wait(left)

    def of_type(self, type_: str, start: int = 0) -> list[Record]:
        """Return the records of one type, from index ``start`` on."""
        with self.cond:
            return [r for r in self.records[start:] if r.get("type") == type_]

    def wait_type(self, type_: str, count: int = 1, start: int = 0, timeout: float = 20) -> list[Record]:
        """Wait until ``count`` records of a type arrived after ``start``; return them."""
        found: list[Record] = self.wait(
            lambda: r if len(r := self.of_type(type_, start)) >= count else None, timeout, f"{count} {type_}"
        )
        return found

    def mark(self) -> int:
        """Return the index of the next record (to look only at what follows)."""
        with self.cond:
            return len(self.records)

    def prompt_and_wait(self, message: str, timeout: float = 30, **fields: Any) -> list[Record]:
        """Prompt, wait for the run's ``agent_settled`` and return the run's records."""
        start = self.mark()
        data = self.call("prompt", message=message, **fields)
        assert data == {"disposition": "started"}, data
        self.wait_type("agent_settled", 1, start, timeout)
        with self.cond:
            return self.records[start:]

    def stderr(self) -> str:
        """Return what the process wrote to stderr so far."""
        self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    # -- ending -------------------------------------------------------------------------------
    def close_stdin(self) -> None:
        """Close stdin: pi's orderly shutdown."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.close()

    def wait_exit(self, timeout: float = 20) -> int:
        """Wait for the process to exit; return its code."""
        code = self.proc.wait(scaled(timeout))
        self._reader.join(scaled(5))
        return code

    def terminate(self) -> None:
        """Send SIGTERM."""
        self.proc.send_signal(signal.SIGTERM)

    def close(self) -> None:
        """End the process (stdin EOF, then a kill if it lingers) and check stdout held only records."""
        if self.proc.poll() is None:
            try:
                self.close_stdin()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(scaled(15))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(scaled(5))
        self._stderr.close()
        assert not self.violations, f"stdout carried non-record lines: {self.violations[:3]!r}"
