"""``get_state`` answered before the kernel loads, from what a full start cached
(docs/reference/pi.md#start-up).

The cache key is the command line plus the CLI's settings fingerprint, so the test computes it
the way ``hermes_cli.early`` does for the process's environment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_cli.early import EarlyContext
from hermes_pi.early import CACHE_NAME, cacheable
from tests.pi.client import PiProcess, pi_env, write_config
from tests.timing import eventually_sync


def cache_of(home: Path) -> Path:
    return home / ".cache" / "hermes" / CACHE_NAME


def key_for(home: Path, args: list[str]) -> str:
    fingerprint = EarlyContext(pi_env(home)).fingerprint()
    return hashlib.sha256(json.dumps([fingerprint, args]).encode()).hexdigest()


def entries(home: Path) -> dict[str, Any]:
    """Return the cached answers (none before the first full start wrote the file)."""
    if not cache_of(home).exists():
        return {}
    data: dict[str, Any] = json.loads(cache_of(home).read_text())["entries"]
    return data


def test_the_command_lines_an_early_answer_can_describe() -> None:
    assert cacheable(["--mode", "rpc", "--no-themes"])
    assert cacheable(["--mode", "rpc", "--model", "mock:alt", "--name", "x", "--no-session"])
    assert not cacheable(["--mode", "rpc", "--session", "/x/y.jsonl"])
    assert not cacheable(["--version"])
    assert not cacheable(["--mode"])


def test_a_full_start_caches_its_answer_and_the_next_start_answers_from_it(
    spawn: Callable[..., PiProcess], home: Path
) -> None:
    first = spawn()
    state = first.call("get_state")
    first.close()
    cached = entries(home)[key_for(home, ["--mode", "rpc"])]
    assert cached == state
    second = spawn()
    second.send_raw(b'{"id":"a","type":"get_state"}\n{"id":"b","type":"prompt","message":"hi"}\n')
    early = second.response("a")["data"]
    assert early["sessionId"] != state["sessionId"]  # a new session, with its own id
    assert {**early, "sessionId": "", "sessionFile": ""} == {**state, "sessionId": "", "sessionFile": ""}
    assert early["sessionFile"].endswith(f"/{early['sessionId']}.jsonl")
    assert second.response("b")["data"] == {"disposition": "started"}  # read after the early answer
    second.wait_type("agent_settled")
    after = second.call("get_state")
    assert after["sessionId"] == early["sessionId"] and after["messageCount"] == 2
    assert "did not match" not in second.stderr()


def test_the_early_answer_comes_from_the_cache_and_a_stale_one_is_replaced(
    spawn: Callable[..., PiProcess], home: Path
) -> None:
    seed = spawn()
    real = seed.call("get_state")
    seed.close()
    key = key_for(home, ["--mode", "rpc"])
    marker = {**real, "thinkingLevel": "xhigh", "model": {**real["model"], "id": "cached-marker"}}
    cache_of(home).write_text(json.dumps({"version": 1, "entries": {key: marker}}))
    stale = spawn()
    early = stale.call("get_state")
    assert early["model"]["id"] == "cached-marker"  # answered from the cache, before the kernel
    # Every get_state at the head of stdin is answered early; the first other command ends that.
    assert stale.call("get_messages") == {"messages": []}
    assert stale.call("get_state")["model"]["id"] == "script"
    eventually_sync(lambda: "the early get_state answer did not match the session" in stale.stderr())
    eventually_sync(lambda: entries(home)[key]["model"]["id"] == "script", what="the cache to be replaced")


def test_a_changed_config_is_never_answered_from_the_cache(
    spawn: Callable[..., PiProcess], home: Path
) -> None:
    spawn().call("get_state")
    write_config(home, 'model = "mock:alt"\n')  # another size: the fingerprint changes
    fresh = spawn()
    assert fresh.call("get_state")["model"]["id"] == "alt"
    assert "did not match" not in fresh.stderr()


def test_a_session_flag_is_never_answered_early(spawn: Callable[..., PiProcess], home: Path) -> None:
    first = spawn()
    first.call("get_state")
    eventually_sync(lambda: entries(home), what="the first start to cache its answer")
    first.prompt_and_wait("keep me")
    state = first.call("get_state")
    first.close()
    again = spawn("--session", state["sessionFile"])
    assert again.call("get_state")["sessionId"] == state["sessionId"]
    again.close()
    assert list(entries(home)) == [key_for(home, ["--mode", "rpc"])]
