"""Open WebUI 0.12.4 in front of ``hermes api``, driven through Open WebUI's own HTTP API
(docs/protocols/api-server.md#open-webui).

Open WebUI is installed on first use into a venv of its own (CPU torch first, from the machine's
local wheel: ``torch==2.13.0+cpu`` can never resolve to a CUDA build), cached outside the checkout
(see ``client_installs.py``; ``.ci/clients/open-webui-0.12.4`` links to it). It runs on loopback
against a ``hermes api`` with the mock model, with everything that reaches the internet turned
off. When the package cannot be installed here the tests are skipped with one line saying why;
with ``CI=true`` that is a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api import client_installs as ci
from tests.api.api_helpers import Server, start_server
from tests.providers.upstream_fakes import closed_port
from tests.timing import eventually, scaled

VERSION = "0.12.4"
NAME = f"open-webui-{VERSION}"
TORCH = "torch==2.13.0+cpu"  # the machine's local CPU wheel; PyPI has no "+cpu" build to pull
WRITE = 'note please [[tool write_file {"path": "note.txt", "content": "private note of A"}]]'
READ = 'look [[tool read_file {"path": "note.txt"}]]'
PWD = 'good morning [[tool terminal {"command": "pwd"}]]'
HERMES_CONFIG = """
model = "mock:history"
[agent]
provider_retries = 0
[titles]
refine = false
"""

pytestmark = pytest.mark.timeout(1500)  # the first run installs Open WebUI (minutes)


def _install() -> Path:
    try:
        return ci.python_client(NAME, [TORCH], [f"open-webui=={VERSION}", TORCH])
    except ci.ClientUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Open WebUI {VERSION} cannot be installed (CI=true): {exc}")
        first = str(exc).splitlines()[0]
        pytest.skip(f"Open WebUI {VERSION} cannot be installed here: {first}")


@dataclass
class WebUI:
    """A running Open WebUI and the ``hermes api`` behind it."""

    url: str
    proc: subprocess.Popen[str]
    hermes: Server
    log_path: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# Where forwarding cannot be turned on: the connection's own headers, filled in by Open WebUI.
CONNECTION_HEADERS = {"X-OpenWebUI-Chat-Id": "{{CHAT_ID}}", "X-OpenWebUI-User-Id": "{{USER_ID}}"}


def _environment(data: Path, hermes: Server, forwarding: bool, headers: bool) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(data),
        DATA_DIR=str(data),
        WEBUI_SECRET_KEY="open-webui-test-secret-0123456789",
        OPENAI_API_BASE_URL=f"{hermes.base}/v1",
        OPENAI_API_KEY=hermes.key,
        # How a multi-user deployment runs (docs/protocols/api-server.md#open-webui): the chat and
        # user ids go with every request, forwarded or as the connection's headers.
        ENABLE_FORWARD_USER_INFO_HEADERS="true" if forwarding else "false",
        ENABLE_SIGNUP="true",
        DEFAULT_USER_ROLE="user",
        BYPASS_MODEL_ACCESS_CONTROL="true",
        # Nothing that reaches the internet: no version check, no model downloads, no Ollama,
        # no web search or image generation, no telemetry; embeddings would go to hermes (unused).
        OFFLINE_MODE="true",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        ENABLE_VERSION_UPDATE_CHECK="false",
        ENABLE_OLLAMA_API="false",
        ENABLE_WEB_SEARCH="false",
        ENABLE_IMAGE_GENERATION="false",
        ENABLE_CODE_INTERPRETER="false",
        ENABLE_CODE_EXECUTION="false",
        ENABLE_COMMUNITY_SHARING="false",
        ENABLE_EVALUATION_ARENA_MODELS="false",
        ENABLE_AUTOCOMPLETE_GENERATION="false",
        RAG_EMBEDDING_ENGINE="openai",
        SCARF_NO_ANALYTICS="true",
        DO_NOT_TRACK="true",
        ANONYMIZED_TELEMETRY="false",
        USER_AGENT="hermes-tests",
    )
    if headers:
        env["OPENAI_API_CONFIGS"] = json.dumps({"0": {"enable": True, "headers": CONNECTION_HEADERS}})
    return env


@contextlib.contextmanager
def _running(factory: pytest.TempPathFactory, forwarding: bool, headers: bool = False) -> Iterator[WebUI]:
    python = _install()
    hermes = start_server(factory.mktemp("hermes"), config=HERMES_CONFIG)
    data = factory.mktemp("open-webui")
    port = closed_port()
    log_path = data / "open-webui.log"
    # Open WebUI's own "open-webui serve", run through the venv's python (no script shebang).
    argv = ["open-webui", "serve", "--host", "127.0.0.1", "--port", str(port)]
    serve = f"import sys; from open_webui import app; sys.argv = {argv!r}; app()"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(python), "-c", serve],
            cwd=data,
            env=_environment(data, hermes, forwarding, headers),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    ui = WebUI(f"http://127.0.0.1:{port}", proc, hermes, log_path)
    try:
        _wait_healthy(ui)
        yield ui
    finally:
        ui.stop()
        hermes.stop()


@pytest.fixture(scope="module")
def webui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebUI]:
    """Open WebUI with user-info forwarding on."""
    with _running(tmp_path_factory, forwarding=True) as ui:
        yield ui


@pytest.fixture(scope="module")
def webui_headers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebUI]:
    """Open WebUI with forwarding off and the ids sent as the connection's templated headers."""
    with _running(tmp_path_factory, forwarding=False, headers=True) as ui:
        yield ui


@pytest.fixture
def webui_plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebUI]:
    """Open WebUI as installed: no forwarding, no connection headers, so no chat or user id."""
    with _running(tmp_path_factory, forwarding=False) as ui:
        yield ui


def _wait_healthy(ui: WebUI) -> None:
    import urllib.request

    deadline = time.monotonic() + scaled(240)
    while time.monotonic() < deadline:
        if ui.proc.poll() is not None:
            raise AssertionError("Open WebUI exited at start:\n" + ui.log_path.read_text()[-4000:])
        try:
            with urllib.request.urlopen(f"{ui.url}/health", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError("Open WebUI did not answer /health:\n" + ui.log_path.read_text()[-4000:])


def _completions(ui: WebUI) -> int:
    return sum("POST /v1/chat/completions 200" in line for line in ui.hermes.log)


class Client:
    """One signed-in Open WebUI user, talking to Open WebUI's HTTP API."""

    def __init__(self, ui: WebUI, http: aiohttp.ClientSession, token: str) -> None:
        self.ui = ui
        self.http = http
        self.headers = {"Authorization": f"Bearer {token}"}

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.http.request(method, self.ui.url + path, json=body, headers=self.headers) as reply:
            try:
                return reply.status, await reply.json(content_type=None)
            except ValueError:
                return reply.status, await reply.text()

    async def send(self, text: str, chat_id: str | None = None, parent: str | None = None) -> tuple[str, str]:
        """Send a user message the way Open WebUI's page does; return (chat id, reply message id)."""
        history: list[dict[str, str]] = []
        if chat_id is not None:
            history = [{"role": m["role"], "content": m["content"]} for m in await self.thread(chat_id)]
        user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
        body: dict[str, Any] = {
            "model": "hermes-agent",
            "stream": True,
            "messages": [*history, {"role": "user", "content": text}],
            "parent_id": parent,
            "user_message": {
                "id": user_id,
                "parentId": parent,
                "childrenIds": [],
                "role": "user",
                "content": text,
                "models": ["hermes-agent"],
                "timestamp": int(time.time()),
            },
            "id": reply_id,
            "session_id": f"socket-{uuid.uuid4().hex[:8]}",
            "background_tasks": {"title_generation": True, "tags_generation": True},
        }
        if chat_id is not None:
            body["chat_id"] = chat_id
        status, answer = await self.call("POST", "/api/chat/completions", body)
        assert status == 200 and isinstance(answer, dict) and answer.get("status"), (status, answer)
        return str(answer["chat_id"]), reply_id

    async def message(self, chat_id: str, message_id: str) -> dict[str, Any]:
        """Wait until Open WebUI has stored the reply as done; return it as re-read from the chat."""
        found: dict[str, Any] = {}

        async def done() -> bool:
            status, chat = await self.call("GET", f"/api/v1/chats/{chat_id}")
            if status != 200:
                return False
            found.update(chat["chat"]["history"]["messages"].get(message_id) or {})
            return bool(found.get("done"))

        await eventually(done, timeout=60, interval=0.2, what="Open WebUI to store the reply")
        return found

    async def thread(self, chat_id: str) -> list[dict[str, Any]]:
        """Return the chat's current branch, oldest first."""
        status, chat = await self.call("GET", f"/api/v1/chats/{chat_id}")
        assert status == 200, chat
        messages = chat["chat"]["history"]["messages"]
        out: list[dict[str, Any]] = []
        current = chat["chat"]["history"]["currentId"]
        while current:
            out.append(messages[current])
            current = messages[current].get("parentId")
        return out[::-1]


@contextlib.asynccontextmanager
async def _signed_in(webui: WebUI) -> AsyncIterator[dict[str, Client]]:
    """Ada (the first sign-up, so the admin) and Bob (a user she adds), signed in."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=scaled(60))) as http:
        if not webui.tokens:
            ada = {"name": "ada", "email": "ada@example.test", "password": "ada-pass-0123"}
            webui.tokens["ada"] = await _token(http, f"{webui.url}/api/v1/auths/signup", ada)
            bob = {"name": "bob", "email": "bob@example.test", "password": "bob-pass-0123", "role": "user"}
            admin = {"Authorization": f"Bearer {webui.tokens['ada']}"}
            webui.tokens["bob"] = await _token(http, f"{webui.url}/api/v1/auths/add", bob, admin)
        yield {name: Client(webui, http, token) for name, token in webui.tokens.items()}


@pytest.fixture
async def users(webui: WebUI) -> AsyncIterator[dict[str, Client]]:
    async with _signed_in(webui) as clients:
        yield clients


async def _token(http: aiohttp.ClientSession, url: str, form: dict[str, str], headers: Any = None) -> str:
    async with http.post(url, json=form, headers=headers) as reply:
        answer = await reply.json(content_type=None)
        assert reply.status == 200, answer
    return str(answer["token"])


async def test_two_users_concurrent_chats_with_one_opener_stay_apart(
    webui: WebUI, users: dict[str, Client]
) -> None:
    await _two_users_stay_apart(webui, users)


async def test_the_connection_headers_keep_chats_apart_without_forwarding(webui_headers: WebUI) -> None:
    async with _signed_in(webui_headers) as users:
        await _two_users_stay_apart(webui_headers, users)


async def test_without_any_chat_id_two_users_chats_with_one_opener_stay_apart(webui_plain: WebUI) -> None:
    # Nothing names the chat: each one's history finds its session. The opener asks for the
    # working directory, so each chat's first answer names its own folder, as a real model's
    # answers differ; word-for-word identical chats cannot be told apart without a chat id.
    async with _signed_in(webui_plain) as users:
        await _two_users_stay_apart(webui_plain, users, opener=PWD)


async def _two_users_stay_apart(webui: WebUI, users: dict[str, Client], opener: str = "") -> None:
    ada, bob = users["ada"], users["bob"]
    first = opener or "[[delay 30]] good morning"
    (a_chat, a_first), (b_chat, b_first) = await asyncio.gather(ada.send(first), bob.send(first))
    replies = []
    for client, chat, first_id in ((ada, a_chat, a_first), (bob, b_chat, b_first)):
        replies.append((await client.message(chat, first_id))["content"])
    if opener:
        workspaces = webui.hermes.home / "workspaces"
        assert all(r.startswith(f"Done: {workspaces}/api-") for r in replies) and len(set(replies)) == 2
    else:
        assert replies == ["Turns: good morning"] * 2
    # Ada's agent writes a note in her chat's folder; Bob's looks for it in his and finds none.
    a_write = (await ada.send(WRITE, a_chat, a_first))[1]
    assert (await ada.message(a_chat, a_write))["content"].startswith("Done: ")
    b_read = (await bob.send(READ, b_chat, b_first))[1]
    read = (await bob.message(b_chat, b_read))["content"]
    assert read.startswith("Done: ") and "private note of A" not in read
    # Open WebUI asks for a title and tags of each chat (### Task: prompts): 4 turns + 4 tasks.
    await eventually(lambda: _completions(webui) >= 8, timeout=60, what="Open WebUI's title and tag requests")
    # Each history holds its own turns only, none of the task prompts.
    a_next = (await ada.send("and now?", a_chat, a_write))[1]
    assert (await ada.message(a_chat, a_next))["content"] == "Turns: good morning | note please | and now?"
    b_next = (await bob.send("what now?", b_chat, b_read))[1]
    assert (await bob.message(b_chat, b_next))["content"] == "Turns: good morning | look | what now?"
    folders = sorted(p.name for p in (webui.hermes.home / "workspaces").iterdir())
    named = re.compile(r"api-[0-9a-f]{16}" if opener else r"api-chat-[0-9a-f]{16}")
    assert len(folders) == 2 and all(named.fullmatch(f) for f in folders), folders


async def test_a_tool_run_shows_a_status_line(users: dict[str, Client]) -> None:
    ada = users["ada"]
    chat, reply = await ada.send('check [[tool terminal {"command": "echo visible"}]]')
    message = await ada.message(chat, reply)
    assert message["content"] == "Done: visible"
    statuses = message.get("statusHistory") or []
    descriptions = [s.get("description", "") for s in statuses]
    assert any(
        d.startswith("💻 Run: echo visible") and s.get("done") is False
        for d, s in zip(descriptions, statuses, strict=True)
    ), statuses
    assert any(
        d.startswith("💻 Run: echo visible — done in") and s.get("done") is True
        for d, s in zip(descriptions, statuses, strict=True)
    ), statuses


async def test_a_failing_title_request_is_a_clean_502(webui: WebUI, users: dict[str, Client]) -> None:
    ada = users["ada"]
    body = {
        "model": "hermes-agent",
        "messages": [{"role": "user", "content": "plan a trip [[error quota exhausted]]"}],
        "chat_id": str(uuid.uuid4()),
    }
    before = len(webui.hermes.log)
    status, _ = await ada.call("POST", "/api/v1/tasks/title/completions", body)
    assert status >= 400
    await eventually(lambda: any(" 502 " in line for line in webui.hermes.log[before:]))
    lines = "".join(webui.hermes.log[before:])
    assert "task prompt failed: provider_error" in lines and "quota exhausted" in lines
    assert "Traceback" not in lines and " 500 " not in lines


async def test_an_error_survives_rereading_the_chat(users: dict[str, Client]) -> None:
    bob = users["bob"]
    chat, reply = await bob.send("this fails [[error upstream exploded]]")
    message = await bob.message(chat, reply)
    error = message.get("error")
    assert error, message
    assert "upstream exploded" in str(error.get("content") if isinstance(error, dict) else error)
    again = {m["id"]: m for m in await bob.thread(chat)}[reply]  # a reload reads the chat again
    assert again.get("error") == error
