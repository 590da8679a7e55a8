"""``hermes --tui`` without Node: finding the bundle, the one-line refusal, and the launcher that
stands in for ``python -m tui_gateway.entry`` (docs/protocols/tui-gateway.md#using-the-ink-tui).

A stand-in ``node`` (``HERMES_NODE``) does what the Ink TUI does when it starts its gateway:
``$HERMES_PYTHON -m tui_gateway.entry`` with the bundle's root first on ``PYTHONPATH``, in
``HERMES_CWD``. Decoy ``hermes_cli`` and ``tui_gateway`` packages sit on that ``PYTHONPATH``, as
upstream's wheel root has them, and in the user's folder; the gateway that answers must still be
ours.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import clean_env, run_hermes
from tests.timing import eventually_sync, scaled

FAKE_NODE = textwrap.dedent(
    """\
    import json, os, subprocess, sys
    bundle = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(bundle)))
    env = dict(os.environ)
    shadows = [root, os.environ["DECOY_ROOT"], env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(shadows)
    env["HERMES_PYTHON_SRC_ROOT"] = root
    cwd = os.environ.get("HERMES_CWD") or root
    request = json.dumps({"id": 1, "jsonrpc": "2.0", "method": "session.create", "params": {}})
    child = subprocess.Popen(
        [os.environ["HERMES_PYTHON"], "-m", "tui_gateway.entry"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
    )
    child.stdin.write((request + "\\n").encode())
    child.stdin.flush()
    lines = []
    for raw in child.stdout:
        lines.append(raw.decode())
        if json.loads(raw).get("id") == 1:
            break
    child.stdin.close()
    lines += [raw.decode() for raw in child.stdout]
    child.wait(60)
    record = {
        "argv": sys.argv, "python": os.environ["HERMES_PYTHON"], "cwd": os.environ.get("HERMES_CWD"),
        "bin": os.environ.get("HERMES_BIN"), "stdout": "".join(lines), "stderr": child.stderr.read().decode(),
    }
    with open(os.environ["FAKE_NODE_RECORD"], "w") as fh:
        json.dump(record, fh)
    """
)
DECOY = "raise SystemExit('decoy package imported: ' + __name__)\n"


def _decoys(root: Path) -> None:
    for package in ("hermes_cli", "tui_gateway"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text(DECOY, encoding="utf-8")
    (root / "tui_gateway" / "entry.py").write_text(DECOY, encoding="utf-8")


def _bundle(tmp_path: Path) -> Path:
    """An installed-looking bundle: ``site/hermes_cli/tui_dist/entry.js`` (no package to import)."""
    root = tmp_path / "site"
    entry = root / "hermes_cli" / "tui_dist" / "entry.js"
    entry.parent.mkdir(parents=True)
    entry.write_text("// not run: the stand-in node reads only its path\n", encoding="utf-8")
    return entry


def _fake_node(tmp_path: Path) -> Path:
    script = tmp_path / "fake_node.py"
    script.write_text(FAKE_NODE, encoding="utf-8")
    node = tmp_path / "node"
    node.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n', encoding="utf-8")
    node.chmod(0o755)
    return node


def test_without_the_bundle_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = run_hermes(tmp_path / "home", "--tui")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "Ink TUI is not installed" in lines[0] and "pip download hermes-agent==0.19.0" in lines[0]
    assert "HERMES_INK_TUI" in lines[0]
    missing = run_hermes(tmp_path / "home", "--tui", env={"HERMES_INK_TUI": str(tmp_path / "nope.js")})
    assert (
        missing.returncode == 2 and f"HERMES_INK_TUI={tmp_path / 'nope.js'} is not a file" in missing.stderr
    )


def test_without_node_one_line_and_exit_2(tmp_path: Path) -> None:
    entry = _bundle(tmp_path)
    (tmp_path / "home").mkdir()
    done = run_hermes(
        tmp_path / "home", "--tui", env={"HERMES_INK_TUI": str(entry), "HERMES_NODE": "no-such-node-here"}
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "no-such-node-here was not found" in done.stderr and "Node.js 20" in done.stderr


def test_misplaced_tui_flag_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = run_hermes(tmp_path / "home", "--tui", "run", "x")
    assert done.returncode == 2 and "--tui comes last" in done.stderr


def test_the_launcher_runs_our_gateway_in_the_users_folder(tmp_path: Path) -> None:
    """The chain ``hermes --tui`` -> node -> ``$HERMES_PYTHON -m tui_gateway.entry`` ends at our
    gateway, in the folder ``hermes --tui`` was started in, whatever shadows it on the way."""
    entry = _bundle(tmp_path)
    node = _fake_node(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "mock:echo"\n', encoding="utf-8")
    work = tmp_path / "work"
    _decoys(work)  # the user's own folder has packages of those names too
    _decoys(tmp_path / "upstream")  # and so does what the TUI puts on PYTHONPATH
    record = tmp_path / "record.json"
    # The bundle is found on sys.path (PYTHONPATH), not through HERMES_INK_TUI.
    extra = {
        "HERMES_NODE": str(node),
        "FAKE_NODE_RECORD": str(record),
        "DECOY_ROOT": str(tmp_path / "upstream"),
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("hermes")), "--tui"],
        env=clean_env(home, extra, pythonpath=[tmp_path / "site"]),
        cwd=str(work),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["argv"][1:] == [str(entry)] and seen["cwd"] == str(work)
    assert seen["bin"] == str(Path(sys.executable).with_name("hermes"))
    frames = [json.loads(line) for line in seen["stdout"].splitlines()]
    assert frames[0]["params"]["payload"]["protocol"]["name"] == "hermes-tui-gateway", seen["stderr"]
    created = next(f for f in frames if f.get("id") == 1)["result"]
    assert created["info"]["cwd"] == str(work) and created["info"]["model"] == "mock:echo"
    launcher = Path(seen["python"])
    assert launcher.parent == home / ".cache" / "hermes" and launcher.stat().st_mode & 0o777 == 0o700
    assert "decoy" not in seen["stderr"]


def test_selection_flags_reach_the_gateway() -> None:
    """``hermes --no-plugin mcp --tui``: the flags go to the gateway's ``hermes ... tui``."""
    from hermes_cli.ink import launcher_text, tui_args

    assert tui_args(["--tui"]) == []
    assert tui_args(["--no-plugin", "mcp", "--with-plugin=extra", "--tui"]) == [
        "--no-plugin",
        "mcp",
        "--with-plugin=extra",
    ]
    assert tui_args(["--tui", "run"]) is None and tui_args(["--bogus", "--tui"]) is None
    assert tui_args(["--plugin", "--tui"]) is None  # --plugin lacks its name
    text = launcher_text("/opt/py/bin/python3", ["--no-plugin", "mcp"])
    assert text.startswith("#!/bin/sh\n")
    command = shlex.split(text.splitlines()[-1])
    assert command[:5] == ["exec", "/opt/py/bin/python3", "-E", "-P", "-c"]
    assert command[5].endswith("sys.exit(main(['--no-plugin', 'mcp', 'tui']))")
    assert "from hermes_launcher import main" in command[5]  # the hermes command's own checks


# -- the pre-started gateway (hermes_launcher/ink_handoff.py) -----------------------------------

HANDOFF_NODE = textwrap.dedent(
    """\
    import json, os, subprocess, sys, time
    record = {"socket": os.environ.get("HERMES_INK_GATEWAY_SOCKET")}

    def children():
        out = {}
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    stat = fh.read()
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\\0", b" ").decode()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if pid.isdigit() and int(fields[1]) == os.getpid():
                out[int(pid)] = (cmd, fields[0])
        return out

    deadline = time.monotonic() + 60
    while not any("prestart(" in c for c, _ in children().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    record["prestarted"] = [p for p, (c, _) in children().items() if "prestart(" in c]
    if os.environ["HANDOFF_MODE"] == "leave":
        with open(os.environ["FAKE_NODE_RECORD"], "w") as fh:
            json.dump(record, fh)
        sys.exit(0)  # the TUI quits before it asks for a gateway
    runs = []
    for attempt in range(2 if os.environ["HANDOFF_MODE"] == "twice" else 1):
        child = subprocess.Popen(
            [os.environ["HERMES_PYTHON"], "-m", "tui_gateway.entry"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        request = json.dumps({"id": 1, "jsonrpc": "2.0", "method": "session.create", "params": {}})
        child.stdin.write((request + "\\n").encode())
        child.stdin.flush()
        frames = []
        for raw in child.stdout:
            frames.append(json.loads(raw))
            if frames[-1].get("id") == 1:
                break
        pipe = os.readlink(f"/proc/self/fd/{child.stdin.fileno()}")
        readers = [
            p for p in children()
            if os.path.exists(f"/proc/{p}/fd/0") and os.readlink(f"/proc/{p}/fd/0") == pipe
        ]
        child.stdin.close()
        child.stdout.read()
        code = child.wait(60)
        runs.append({"frames": frames, "readers": readers, "launcher": child.pid, "code": code,
                     "stderr": child.stderr.read().decode()})
    record["runs"] = runs
    deadline = time.monotonic() + 60
    def left():
        return [p for p in record["prestarted"] if children().get(p, ("", "Z"))[1] != "Z"]

    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    record["prestarted_left"] = left()
    with open(os.environ["FAKE_NODE_RECORD"], "w") as fh:
        json.dump(record, fh)
    """
)


def _handoff(tmp_path: Path, mode: str) -> dict[str, Any]:
    entry = _bundle(tmp_path)
    script = tmp_path / "handoff_node.py"
    script.write_text(HANDOFF_NODE, encoding="utf-8")
    node = tmp_path / "node"
    node.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n', encoding="utf-8")
    node.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "mock:echo"\n', encoding="utf-8")
    record = tmp_path / "record.json"
    extra = {"HERMES_NODE": str(node), "FAKE_NODE_RECORD": str(record), "HANDOFF_MODE": mode}
    extra["HERMES_INK_TUI"] = str(entry)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("hermes")), "--tui"],
        env=clean_env(home, extra),
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return seen


def test_the_gateway_starts_with_node_and_takes_the_tuis_pipes(tmp_path: Path) -> None:
    """``hermes --tui`` starts the gateway before it becomes node; the launcher the TUI runs hands
    the TUI's pipes to it: the pre-started process reads the TUI's stdin, answers, and exits with
    the launcher when the TUI closes the pipe. Its socket folder is gone."""
    seen = _handoff(tmp_path, "once")
    assert len(seen["prestarted"]) == 1 and seen["socket"]
    (run,) = seen["runs"]
    assert run["frames"][0]["params"]["type"] == "gateway.ready", run["stderr"]
    assert run["frames"][-1]["result"]["info"]["model"] == "mock:echo"
    # The TUI's stdin pipe is read by the pre-started gateway (the launcher keeps no copy).
    assert run["readers"] == seen["prestarted"], run
    assert run["code"] == 0 and seen["prestarted_left"] == []
    assert not Path(seen["socket"]).parent.exists()


def test_a_second_gateway_is_started_by_the_launcher(tmp_path: Path) -> None:
    """When the TUI asks again (its gateway ended), there is no pre-started one left: the launcher
    runs the gateway itself and it answers the same way."""
    seen = _handoff(tmp_path, "twice")
    first, second = seen["runs"]
    assert first["readers"] == seen["prestarted"]
    assert second["frames"][-1]["result"]["info"]["model"] == "mock:echo", second["stderr"]
    assert second["readers"] == [second["launcher"]] and second["code"] == 0


def test_an_unclaimed_gateway_ends_with_the_tui(tmp_path: Path) -> None:
    """The TUI quits (or attaches elsewhere) without asking for a gateway: the pre-started one
    notices its parent is gone, exits and removes its socket folder."""
    seen = _handoff(tmp_path, "leave")
    (pid,) = seen["prestarted"]

    def gone() -> bool:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    eventually_sync(gone, timeout=scaled(60), what="the unclaimed gateway to exit")
    eventually_sync(
        lambda: not Path(seen["socket"]).parent.exists(), timeout=scaled(10), what="its folder gone"
    )


def test_no_prestart_when_attaching_or_turned_off(tmp_path: Path) -> None:
    """``HERMES_TUI_GATEWAY_URL`` (the TUI attaches) or ``HERMES_INK_PRESTART=0``: nothing is
    started ahead, and the launcher starts the gateway itself."""
    from hermes_cli.ink import SOCKET_ENV

    for name, value in (("HERMES_INK_PRESTART", "0"), ("HERMES_TUI_GATEWAY_URL", "ws://127.0.0.1:9/api/ws")):
        folder = tmp_path / name
        folder.mkdir()
        entry = _bundle(folder)
        script = folder / "env_node.py"
        script.write_text(
            f"import json, os; json.dump(dict(os.environ), open({str(folder / 'env.json')!r}, 'w'))\n",
            encoding="utf-8",
        )
        node = folder / "node"
        node.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n', encoding="utf-8")
        node.chmod(0o755)
        (folder / "home").mkdir()
        done = run_hermes(
            folder / "home",
            "--tui",
            env={"HERMES_NODE": str(node), "HERMES_INK_TUI": str(entry), name: value},
        )
        assert done.returncode == 0, done.stderr
        env = json.loads((folder / "env.json").read_text(encoding="utf-8"))
        assert SOCKET_ENV not in env
