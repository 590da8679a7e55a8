"""The workspace of API sessions: printed at start, settable with --workspace, reported by health."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.api.api_helpers import HERMES, Server, assert_error, call, clean_env, write_config
from tests.api.conftest import BASE_CONFIG
from tests.timing import eventually

README = "Project Zephyr: a tiny demo project\n\nIt has two parts.\n"


def _project(home: Path) -> Path:
    project = home / "project"
    (project / "docs").mkdir(parents=True)
    (project / "README.md").write_text(README, encoding="utf-8")
    return project


def _summarise() -> dict[str, object]:
    prompt = 'Summarise README.md [[tool read_file {"path": "README.md"}]]'
    return {"messages": [{"role": "user", "content": prompt}]}


async def test_workspace_flag_lets_the_tools_see_the_project(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    project = _project(home)
    # Relative to where `hermes api` starts (the helper starts it in HERMES_HOME).
    server = make_server("", "--workspace", "project", home=home)
    log = "".join(server.log)
    assert f"Workspace: {project.resolve()}" in log

    reply = await call(server, "POST", "/v1/chat/completions", _summarise())
    assert reply.status == 200, reply.text
    assert "Project Zephyr" in reply.json["choices"][0]["message"]["content"]

    where = {"messages": [{"role": "user", "content": 'where [[tool terminal {"command": "pwd"}]]'}]}
    reply = await call(server, "POST", "/v1/chat/completions", where)
    assert reply.json["choices"][0]["message"]["content"] == f"Done: {project.resolve()}"

    health = (await call(server, "GET", "/health/detailed")).json["api_server"]["workspace"]
    assert health == {"mode": "fixed", "path": str(project.resolve())}

    # The server's workspace is an allowed root: a request may narrow it to a folder inside.
    docs = project.resolve() / "docs"
    reply = await call(
        server, "POST", "/v1/chat/completions", where, headers={"X-Hermes-Workspace": str(docs)}
    )
    assert reply.json["choices"][0]["message"]["content"] == f"Done: {docs}"
    outside = await call(
        server, "POST", "/v1/chat/completions", where, headers={"X-Hermes-Workspace": str(tmp_path)}
    )
    assert_error(outside, 400, "invalid_workspace")


async def test_workspace_from_the_environment_and_the_config_file(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    home = tmp_path / "envhome"
    project = _project(home)
    server = make_server("", home=home, env={"API_SERVER_WORKSPACE": str(project)})
    reply = await call(server, "POST", "/v1/runs", {"input": _summarise()["messages"][0]["content"]})  # type: ignore[index]
    assert reply.status == 202
    events = await call(server, "GET", f"/v1/runs/{reply.json['run_id']}/events")
    assert "Project Zephyr" in events.text

    home2 = tmp_path / "confhome"
    project2 = _project(home2)
    server2 = make_server(f'[api_server]\nworkspace = "{project2}"\n', home=home2)
    reply = await call(server2, "POST", "/v1/responses", {"input": _summarise()["messages"][0]["content"]})  # type: ignore[index]
    assert "Project Zephyr" in reply.json["output"][-1]["content"][0]["text"]


async def test_without_a_workspace_each_session_gets_its_own_folder_and_start_up_says_so(
    server: Server,
) -> None:
    log = "".join(server.log)
    folders = server.home / "workspaces"
    assert f"Workspace: a new empty folder per session in {folders}" in log
    assert "--workspace DIR" in log
    # It also says where sessions are kept and that runs are not shared with other instances.
    log = await eventually(lambda: "Run bus:" in "".join(server.log) and "".join(server.log))
    assert f"Storage: sqlite at {server.home / 'hermes.sqlite3'}" in log
    assert "Run bus: in-process (runs are served by this instance only)" in log
    health = (await call(server, "GET", "/health/detailed")).json["api_server"]["workspace"]
    assert health == {"mode": "per_session", "path": str(folders)}


def test_a_workspace_that_is_not_a_directory_stops_start_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, BASE_CONFIG)
    (home / "file.txt").write_text("x")
    for bad in ("missing-dir", "file.txt"):
        done = subprocess.run(
            [HERMES, "api", "--port", "0", "--workspace", bad],
            env=clean_env(home),
            cwd=str(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert f"workspace: {bad} is not an existing directory" in done.stderr
        assert "listening" not in done.stderr
