"""Drive the real Ink TUI in a tmux terminal: type keys, read the screen, read the frames.

:class:`InkTui` starts ``node entry.js`` (or ``hermes --tui``) in a private tmux server, with
``HERMES_PYTHON`` pointing at a script that runs this checkout's ``hermes tui`` behind
``frame_proxy.py``, so a test sees both what the user sees (``capture-pane``) and every frame
between the TUI and the gateway.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.timing import eventually_sync, scaled
from tests.tui.client import hermes_env, write_config
from tests.tui.ink import bundle

PROXY = Path(__file__).with_name("frame_proxy.py")
GATEWAY_CODE = "import sys; from hermes_cli.main import main; sys.exit(main(sys.argv[1:]))"
Frame = dict[str, Any]


def approval_shown(screen: str) -> bool:
    """Tell whether the approval dialog is open. Its options are matched, not its title: the
    title starts with "⚠", whose width the TUI's renderer and tmux may count differently, and a
    redraw then leaves a stray letter in "approval required" now and then."""
    return "1. Allow once" in screen and "4. Deny" in screen


def ink_config(home: Path, body: str = 'model = "mock:echo"\n') -> None:
    """Write ``config.toml``: ``body`` plus a ``[tui]`` table whose answer pause grows with
    ``HERMES_TEST_TIME_SCALE`` (the TUI redraws slower on a loaded machine; see
    ``tui.answer_settle_s`` in docs/reference/tui-gateway.md#settings)."""
    write_config(home, f"{body}\n[tui]\nanswer_settle_s = {min(scaled(0.8), 5.0)}\n")


def gateway_command(hermes_args: Sequence[str] = ("tui",)) -> list[str]:
    """Return the command that runs this checkout's gateway the way ``hermes --tui``'s launcher does."""
    return [sys.executable, "-E", "-P", "-c", GATEWAY_CODE, *hermes_args]


class Recording:
    """The frames ``frame_proxy.py`` wrote: ``in`` (TUI -> gateway) and ``out`` (gateway -> TUI)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def records(self) -> list[dict[str, Any]]:
        """Return every record so far, in order."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def requests(self, method: str | None = None) -> list[Frame]:
        """Return the requests the TUI sent (optionally of one method)."""
        return [
            r["frame"]
            for r in self.records()
            if r["dir"] == "in" and (method is None or r["frame"].get("method") == method)
        ]

    def sent(self) -> list[Frame]:
        """Return every frame the gateway sent."""
        return [r["frame"] for r in self.records() if r["dir"] == "out"]

    def events(self, type_: str | None = None) -> list[Frame]:
        """Return the event params the gateway sent (optionally of one type)."""
        return [
            f["params"]
            for f in self.sent()
            if f.get("method") == "event" and (type_ is None or f["params"].get("type") == type_)
        ]

    def result_of(self, method: str, index: int = -1) -> Frame:
        """Return the response to the ``index``-th request of ``method``."""
        request = self.requests(method)[index]
        for frame in self.sent():
            if frame.get("id") == request.get("id") and "method" not in frame:
                return frame
        raise AssertionError(f"no response to {method} yet")

    def errors(self) -> list[tuple[str, Frame]]:
        """Return ``(method, error)`` for every error response the gateway sent."""
        methods = {f.get("id"): f.get("method") for f in self.requests()}
        return [
            (str(methods.get(f.get("id"))), f["error"])
            for f in self.sent()
            if "error" in f and "method" not in f
        ]


class InkTui:
    """One running Ink TUI in tmux.

    :param home: the ``HERMES_HOME`` (holds ``config.toml``).
    :param workspace: the folder the user starts it in (``HERMES_CWD``).
    :param env: extra environment for the TUI (and so for the gateway it starts).
    :param via_hermes: start it with ``hermes --tui`` instead of ``node entry.js``; then frames are
        not recorded (the launcher is the product's own).
    :param attach_url: set ``HERMES_TUI_GATEWAY_URL`` (attach over WebSocket, nothing is spawned).
    """

    def __init__(
        self,
        home: Path,
        workspace: Path,
        *,
        env: Mapping[str, str] | None = None,
        via_hermes: bool = False,
        attach_url: str | None = None,
        cols: int = 120,
        rows: int = 45,
        gateway_args: Sequence[str] = ("tui",),
    ) -> None:
        self.home = home
        self.workspace = workspace
        # tmux socket paths must be short (about 100 bytes), so not under pytest's tmp_path.
        self.dir = Path(tempfile.mkdtemp(prefix="ink-", dir="/tmp"))
        self.socket = self.dir / "s"
        self.recording = Recording(self.dir / "frames.ndjson")
        self.stderr_path = self.dir / "tui-stderr.log"
        tui_env = hermes_env(home, env)
        tui_env.pop("PYTHONDONTWRITEBYTECODE", None)
        tui_env["HERMES_TUI_STARTUP_TIMEOUT_MS"] = "60000"
        tui_env["TERM"] = "xterm-256color"
        if attach_url is not None:
            tui_env["HERMES_TUI_GATEWAY_URL"] = attach_url
        if via_hermes:
            tui_env["HERMES_INK_TUI"] = str(bundle.entry_js())
            argv = [str(Path(sys.executable).with_name("hermes")), "--tui"]
        else:
            launcher = self.dir / "gateway.sh"
            command = [sys.executable, "-E", "-P", str(PROXY), str(self.recording.path), "--"]
            command += gateway_command(gateway_args)
            launcher.write_text("#!/bin/sh\nexec " + shlex.join(command) + "\n", encoding="utf-8")
            launcher.chmod(0o700)
            tui_env["HERMES_PYTHON"] = str(launcher)
            tui_env["HERMES_CWD"] = str(workspace)
            argv = [bundle.node(), str(bundle.entry_js())]
        script = self.dir / "run.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(tui_env.items()))
        script.write_text(
            "#!/bin/sh\n"
            + exports
            + f"cd {shlex.quote(str(workspace))}\n"
            + f"exec {shlex.join(argv)} 2>>{shlex.quote(str(self.stderr_path))}\n",
            encoding="utf-8",
        )
        script.chmod(0o700)
        self.started_at = time.monotonic()
        self.last_screen: str | None = None
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows), str(script))

    # -- tmux -------------------------------------------------------------------------------------
    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [bundle.tmux(), "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30
        )

    def text(self) -> str:
        """Return what the terminal shows now."""
        done = self._tmux("capture-pane", "-p", "-t", "0")
        return done.stdout

    def lines(self) -> list[str]:
        """Return the screen lines, right-stripped."""
        return [line.rstrip() for line in self.text().splitlines()]

    def keys(self, *names: str) -> None:
        """Press keys by tmux name (``Enter``, ``Escape``, ``C-c``, ``Up``, ``Down``, ``Tab``…)."""
        self._tmux("send-keys", "-t", "0", *names)

    def type(self, text: str) -> None:
        """Type text literally (no key names)."""
        self._tmux("send-keys", "-t", "0", "-l", text)

    # -- waiting ----------------------------------------------------------------------------------
    def wait_for(
        self, needle: str | Callable[[str], Any], timeout: float = 20, what: str | None = None
    ) -> str:
        """Wait until the screen contains ``needle`` (or the callable holds); return the screen."""
        last = [""]

        def check() -> Any:
            last[0] = self.text()
            if callable(needle):
                return needle(last[0]) and last[0]
            return needle in last[0] and last[0]

        try:
            result: str = eventually_sync(check, timeout=timeout, interval=0.05, what=what or repr(needle))
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- screen ---\n{last[0]}\n--- stderr ---\n{self.stderr()}"
            ) from None
        return result

    def wait_gone(self, needle: str, timeout: float = 20) -> str:
        """Wait until the screen no longer contains ``needle``."""
        return self.wait_for(lambda s: needle not in s, timeout, what=f"{needle!r} to disappear")

    def composer(self) -> str:
        """Return the input line (the last line starting with the prompt glyph)."""
        for line in reversed(self.lines()):
            stripped = line.strip()
            if stripped.startswith("❯"):
                return stripped[1:].strip()
        return ""

    def _completion_box(self) -> bool:
        """Whether a completion list is drawn right above the input line."""
        lines = self.lines()
        for i in range(len(lines) - 1, 0, -1):
            if lines[i].strip().startswith("❯"):
                return lines[i - 1].strip().startswith("╚")
        return False

    def ready(self, timeout: float = 40) -> str:
        """Wait for the first prompt: the session panel and an idle status bar."""
        return self.wait_for(
            lambda s: "Session:" in s and "─ ready" in s, timeout, what="the TUI to be ready"
        )

    def submit(self, text: str, timeout: float = 20) -> None:
        """Type a line, wait for it to echo in the input line, press Enter."""
        self.type(text)
        tail = text[-20:]

        def echoed(screen: str) -> bool:
            bottom = "".join(line.strip() for line in screen.splitlines()[-8:])
            return tail in bottom

        self.wait_for(echoed, timeout, what=f"{text!r} to echo")
        # The input line hands typed text to the rest of the TUI on a short timer; an Enter read
        # before that can leave the submitted text behind in the input (the TUI's own race, wide
        # on a loaded machine). Wait until the echo has held for a moment.
        held = time.monotonic()
        while time.monotonic() - held < scaled(0.15):
            if not echoed(self.text()):
                held = time.monotonic()
            time.sleep(0.03)
        if text.startswith("/") and " " not in text and self._completion_box():
            # Enter applies a completion still showing for an earlier prefix: wait for this one's.
            eventually_sync(
                lambda: any(
                    r["params"].get("text") == text and _answered(self.recording, r)
                    for r in self.recording.requests("complete.slash")
                ),
                timeout=timeout,
                what=f"the completions for {text!r}",
            )
            time.sleep(0.1)  # the TUI applies them on its next render
        self.keys("Enter")

    def wait_request(self, method: str, count: int = 1, timeout: float = 20) -> Frame:
        """Wait until the TUI has sent ``count`` requests of ``method``; return the last."""
        found: list[Frame] = eventually_sync(
            lambda: (r := self.recording.requests(method)) and len(r) >= count and r,
            timeout=timeout,
            what=f"{count} {method} request(s)",
        )
        return found[count - 1]

    def wait_event(self, type_: str, count: int = 1, timeout: float = 20) -> Frame:
        """Wait until the gateway has sent ``count`` events of ``type_``; return the last."""
        found: list[Frame] = eventually_sync(
            lambda: (e := self.recording.events(type_)) and len(e) >= count and e,
            timeout=timeout,
            what=f"{count} {type_} event(s)",
        )
        return found[count - 1]

    def stderr(self) -> str:
        """Return what the TUI (and the gateway) wrote to stderr."""
        return (
            self.stderr_path.read_text(encoding="utf-8", errors="replace")
            if self.stderr_path.exists()
            else ""
        )

    def close(self) -> None:
        """Stop the TUI (SIGHUP through tmux) and wait for it and its gateway to end; the screen
        it showed last stays in :attr:`last_screen`."""
        if self.last_screen is None:
            self.last_screen = self.text()
        gateways = _gateway_pids(self.dir)
        panes = self._tmux("list-panes", "-a", "-F", "#{pane_pid}").stdout.split()
        gateways += [int(pid) for pid in panes if pid.isdigit()]
        self._tmux("kill-server")
        try:
            eventually_sync(
                lambda: not any(_alive(pid) for pid in gateways),
                timeout=10,
                what="the TUI and gateway to exit",
            )
        except AssertionError:
            for pid in gateways:
                if _alive(pid):
                    os.kill(pid, 9)

    def remove(self) -> None:
        """Delete the tmux socket, scripts and recorded frames (after :meth:`close`)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _answered(recording: Recording, request: Frame) -> bool:
    return any(f.get("id") == request.get("id") and "method" not in f for f in recording.sent())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _gateway_pids(marker: Path) -> list[int]:
    """Return the pids of processes whose command line mentions ``marker`` (our proxy and gateway)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(marker) in cmdline:
            pids.append(int(entry.name))
    return pids
