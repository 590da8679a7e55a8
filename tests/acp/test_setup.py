"""``hermes acp --setup`` driven through a real pseudo-terminal (docs/reference/acp.md#interactive-setup).

The setup process gets the pty as its controlling terminal, so hidden key input (``getpass``)
and Ctrl-C behave as they do for a person. An OpenAI-compatible fake upstream on loopback stands
in for Ollama or OpenRouter.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import stat
import termios
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.acp.conftest import HERMES, Home
from tests.timing import eventually

# Variables of the person running the tests that would change what the setup offers.
_FOREIGN = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LAB_KEY")
OPENROUTER_KEY = "sk-or-v1-setup-test-0123456789abcdef"


class FakeUpstream:
    """An OpenAI-compatible server: ``GET /v1/models`` and streamed ``POST /v1/chat/completions``.

    :param mode: ``ok`` (answer), ``unauthorized`` (401 echoing the key, as some vendors do)
        or ``hang`` (never answer).
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.reply = "hello from the fake upstream"
        self.chats: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.url = ""
        self._released = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Listen on 127.0.0.1 on a free port."""
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        """Let hanging requests go and stop listening."""
        self._released.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def _refusal(self, request: web.Request) -> web.Response | None:
        if self.mode != "unauthorized":
            return None
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        error = {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}
        return web.json_response({"error": error}, status=401)

    async def _models(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        return web.json_response({"object": "list", "data": [{"id": "qwen3:8b", "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.chats.append(body)
        self.auth.append(request.headers.get("Authorization"))
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        if self.mode == "hang":
            await self._released.wait()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        events = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": self.reply}}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}},
        ]
        for event in events:
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    """Return a started fake upstream."""
    fake = FakeUpstream()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


def _take_terminal() -> None:
    # Runs in the child after setsid(): make the pty (already fd 0) its controlling terminal, so
    # getpass reads it and Ctrl-C on it sends SIGINT to the setup process.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A ``hermes acp --setup`` process on a pty, read without blocking the event loop."""

    def __init__(self, process: asyncio.subprocess.Process, master: int) -> None:
        """Wrap the process.

        :param process: the setup process.
        :param master: the pty's master side.
        """
        self.process = process
        self.master = master
        self.output = ""
        self._seen = 0

    @classmethod
    async def start(cls, env: dict[str, str]) -> Terminal:
        """Spawn the setup with the pty as stdin, stdout, stderr and controlling terminal.

        :param env: its environment.
        """
        master, slave = pty.openpty()
        process = await asyncio.create_subprocess_exec(
            HERMES,
            "acp",
            "--setup",
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        os.set_blocking(master, False)
        return cls(process, master)

    def _drain(self) -> bool:
        """Read what is there; return False once the terminal is closed."""
        while True:
            try:
                data = os.read(self.master, 4096)
            except BlockingIOError:
                return True
            except OSError:  # EIO: every slave descriptor is closed
                return False
            if not data:
                return False
            self.output += data.decode(errors="replace")

    async def expect(self, text: str, timeout: float = 20.0) -> str:
        """Wait until ``text`` appears after what earlier calls consumed.

        :returns: the output up to and including ``text``.
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            open_ = self._drain()
            found = self.output.find(text, self._seen)
            if found >= 0:
                chunk = self.output[self._seen : found + len(text)]
                self._seen = found + len(text)
                return chunk
            assert open_ and loop.time() < end, f"waiting for {text!r}; got {self.output[self._seen :]!r}"
            await asyncio.sleep(0.02)

    def send(self, text: str) -> None:
        """Type ``text`` (add ``\\n`` for Enter)."""
        os.write(self.master, text.encode())

    async def answer(self, prompt: str, reply: str) -> str:
        """Wait for ``prompt`` and type ``reply`` followed by Enter.

        :returns: the output up to the prompt.
        """
        seen = await self.expect(prompt)
        self.send(reply + "\n")
        return seen

    async def finish(self, timeout: float = 20.0) -> int:
        """Wait for the exit while reading the rest of the output.

        :returns: the exit code.
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while self.process.returncode is None:
            self._drain()
            assert loop.time() < end, f"setup did not exit; output: {self.output!r}"
            try:
                await asyncio.wait_for(self.process.wait(), 0.05)
            except TimeoutError:
                pass
        self._drain()
        return self.process.returncode

    def close(self) -> None:
        """Kill the process if it still runs and close the pty."""
        if self.process.returncode is None:
            self.process.kill()
        os.close(self.master)


@pytest.fixture
async def terminal() -> AsyncIterator[Any]:
    """Return ``await terminal(env)`` starting setups that are cleaned up afterwards."""
    started: list[Terminal] = []

    async def start(env: dict[str, str]) -> Terminal:
        term = await Terminal.start(env)
        started.append(term)
        return term

    try:
        yield start
    finally:
        for term in started:
            term.close()
            if term.process.returncode is None:
                await term.process.wait()


def _env(home: Home, **extra: str) -> dict[str, str]:
    env = home.env(**extra)
    for name in _FOREIGN:
        if name not in extra:
            env.pop(name, None)
    return env


def _files(home: Home) -> dict[str, tuple[bytes, int] | None]:
    """Return the bytes and mode of config.toml and .env (None when missing)."""
    found: dict[str, tuple[bytes, int] | None] = {}
    for name in ("config.toml", ".env"):
        path = home.path / name
        found[name] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) if path.exists() else None
    return found


def _config(home: Home) -> dict[str, Any]:
    return tomllib.loads((home.path / "config.toml").read_text())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_ollama_preset_tested_then_used_by_hermes_acp(
    home: Home, upstream: FakeUpstream, terminal: Any, spawn: Any
) -> None:
    """Ollama (no key) with a custom base URL, a passing test, then a working `hermes acp`."""
    env = _env(home)
    term = await terminal(env)
    # The configured provider is the default.
    listing = await term.answer("Provider (number or name) [mock]", "ollama")
    for name in ("openai", "anthropic", "mock", "openrouter", "ollama", "vllm", "llamacpp", "lmstudio"):
        assert f" {name} " in listing, name
    # A model id with a colon: "qwen3" names no provider, so the whole text is the model.
    await term.answer("Model (number, name or provider:model)", "qwen3:8b")
    await term.answer("Base URL [http://127.0.0.1:11434/v1]", upstream.url)
    await term.answer("Test the connection", "y")
    assert "needs no API key" in term.output
    await term.expect("connection test: ok")
    assert await term.finish() == 0, term.output
    assert "API key for" not in term.output
    assert f"wrote {home.path / 'config.toml'}" in term.output
    assert str(home.path / ".env") in term.output  # both paths are printed
    assert len(upstream.chats) == 1 and upstream.chats[0]["model"] == "qwen3:8b"
    assert upstream.auth == [None]  # no key is sent to a keyless preset

    config = _config(home)
    assert config["model"] == "ollama:qwen3:8b"
    assert config["providers"]["ollama"]["base_url"] == upstream.url
    assert _mode(home.path / "config.toml") == 0o600
    assert not (home.path / ".env").exists()

    agent = await spawn(env=env, initialize={})
    assert (await agent.request("authenticate", {"methodId": "hermes-config"})) == {}
    sid = (await agent.new(home.workspace))["sessionId"]
    assert (await agent.prompt(sid, "hi"))["stopReason"] == "end_turn"
    assert agent.text(sid) == upstream.reply
    assert any(chat["model"] == "qwen3:8b" for chat in upstream.chats[1:])


async def test_failed_test_declined_leaves_files_untouched(
    home: Home, upstream: FakeUpstream, terminal: Any
) -> None:
    """A 401 during the test is shown redacted; declining to keep writes nothing (exit 1)."""
    home.write_config('# my settings\nmodel = "mock:script"\n')
    (home.path / ".env").write_text('OTHER="x"\n')
    os.chmod(home.path / "config.toml", 0o644)
    before = _files(home)
    upstream.mode = "unauthorized"
    term = await terminal(_env(home))
    await term.answer("Provider (number or name)", "openrouter")
    listing = await term.answer("Model (number", "1")
    assert "1. anthropic/claude-sonnet-4.6" in listing
    await term.answer("Base URL [https://openrouter.ai/api/v1]", upstream.url)
    await term.answer("API key for openrouter", OPENROUTER_KEY)
    await term.answer("Test the connection", "y")
    failure = await term.answer("Keep these settings anyway?", "n")
    assert "connection test failed" in failure and "401" in failure
    assert await term.finish() == 1, term.output
    assert "nothing was written" in term.output
    assert OPENROUTER_KEY not in term.output  # neither echoed nor repeated from the upstream's error
    assert upstream.auth == [f"Bearer {OPENROUTER_KEY}"]  # the test used the typed key
    assert _files(home) == before


async def test_openrouter_key_goes_quoted_to_env(home: Home, terminal: Any) -> None:
    """A typed OpenRouter key lands in .env as OPENROUTER_API_KEY="…"; the default URL is not stored."""
    (home.path / ".env").write_text("# keys\nOTHER=1\n")
    term = await terminal(_env(home))
    await term.answer("Provider (number or name)", "openrouter")
    await term.answer("Model (number", "2")
    await term.answer("Base URL", "")
    await term.answer("API key for openrouter (saved to .env as OPENROUTER_API_KEY", OPENROUTER_KEY)
    await term.answer("Test the connection", "")  # default: no test
    assert await term.finish() == 0, term.output
    assert OPENROUTER_KEY not in term.output  # hidden input
    assert f"wrote {home.path / '.env'}" in term.output
    config = _config(home)
    assert config["model"] == "openrouter:anthropic/claude-opus-4.1"
    assert "providers" not in config  # the preset's own URL is the default, so nothing to store
    dotenv = home.path / ".env"
    assert dotenv.read_text().splitlines() == ["# keys", "OTHER=1", f'OPENROUTER_API_KEY="{OPENROUTER_KEY}"']
    assert _mode(dotenv) == 0o600
    assert _mode(home.path / "config.toml") == 0o600


async def test_key_from_the_environment_is_used_not_stored(home: Home, terminal: Any) -> None:
    """With OPENROUTER_API_KEY already set, accepting it stores no key."""
    term = await terminal(_env(home, OPENROUTER_API_KEY="sk-or-from-the-environment-123"))
    await term.answer("Provider (number or name)", "openrouter")
    await term.answer("Model (number", "openrouter:deepseek/deepseek-chat")
    await term.answer("Base URL", "")
    await term.answer("OPENROUTER_API_KEY is already set; use it?", "")
    await term.answer("Test the connection", "n")
    assert await term.finish() == 0, term.output
    assert "API key for" not in term.output
    assert _config(home)["model"] == "openrouter:deepseek/deepseek-chat"
    assert not (home.path / ".env").exists()


async def test_custom_provider_is_offered_and_its_url_updated(
    home: Home, upstream: FakeUpstream, terminal: Any
) -> None:
    """A [[providers.custom]] entry is a choice; a new base URL rewrites that entry."""
    home.write_config(
        'model = "mock:script"\n\n[[providers.custom]]\nname = "lab"\n'
        'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "LAB_KEY"\n'
    )
    term = await terminal(_env(home))
    listing = await term.answer("Provider (number or name)", "lab")
    assert "custom endpoint at http://127.0.0.1:9/v1" in listing
    await term.answer("Model (number", "tiny")
    await term.answer("Base URL", upstream.url)
    await term.answer("API key for lab", "")  # optional for a custom endpoint
    await term.answer("Test the connection", "y")
    await term.expect("connection test: ok")
    assert await term.finish() == 0, term.output
    config = _config(home)
    assert config["model"] == "lab:tiny"
    assert config["providers"]["custom"] == [
        {"name": "lab", "base_url": upstream.url, "api_key_env": "LAB_KEY"}
    ]


async def test_ctrl_c_at_the_key_prompt_changes_nothing(home: Home, terminal: Any) -> None:
    """Ctrl-C at the hidden key prompt exits 1 and leaves both files as they were."""
    (home.path / ".env").write_text('OPENROUTER_OTHER="keep"\n')
    before = _files(home)
    term = await terminal(_env(home))
    await term.answer("Provider (number or name)", "openrouter")
    await term.answer("Model (number", "1")
    await term.answer("Base URL", "http://127.0.0.1:9/v1")
    await term.expect("API key for openrouter")
    term.send("sk-or-half-typed")
    term.send("\x03")
    assert await term.finish() == 1, term.output
    assert "setup aborted; nothing was written" in term.output
    assert _files(home) == before


async def test_ctrl_c_during_the_connection_test_changes_nothing(
    home: Home, upstream: FakeUpstream, terminal: Any
) -> None:
    """Ctrl-C while the test waits on a silent upstream stops at once, writing nothing."""
    before = _files(home)
    upstream.mode = "hang"
    term = await terminal(_env(home))
    await term.answer("Provider (number or name)", "vllm")
    await term.answer("Model (number", "m")
    await term.answer("Base URL", upstream.url)
    await term.answer("Test the connection", "y")
    await term.expect("testing vllm:m")
    await eventually(lambda: upstream.chats, what="the request to be in flight")
    term.send("\x03")
    assert await term.finish(timeout=10) == 1, term.output
    assert "nothing was written" in term.output
    assert _files(home) == before


async def test_eof_at_the_first_prompt_changes_nothing(home: Home, terminal: Any) -> None:
    """Ctrl-D (EOF) at the provider prompt exits 1 without writing."""
    before = _files(home)
    term = await terminal(_env(home))
    await term.expect("Provider (number or name)")
    term.send("\x04")
    assert await term.finish() == 1, term.output
    assert _files(home) == before
