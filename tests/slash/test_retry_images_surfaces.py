"""``/retry`` sends a prompt's images again on every surface that runs the resent turn.

A prompt with two images is stored in the shared SQLite file; then ``hermes run --session ID
/retry``, the TUI (``command.dispatch`` answered with ``prompt.submit``, as a host does) and ACP
(a ``/retry`` prompt) each resend it. After each, the newest active user row holds both images
again, read back from the file by a fresh kernel.
"""

from __future__ import annotations

from pathlib import Path

from hermes_core import ImagePart, Kernel, TextPart, TurnCompleted
from hermes_core.testing import make_kernel
from tests.cli.cli_helpers import run_hermes

from .conftest import ALL_PLUGINS
from .transports import acp_agent, acp_reply, make_home, start_tui

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0 not really a jpeg"
SID = "retry-images-everywhere"


def _kernel(home: Path) -> Kernel:
    return make_kernel(
        entry_points=[*ALL_PLUGINS, "sqlite"],
        settings={
            "model": "mock:echo",
            "storage": {"backend": "sqlite", "path": str(home / "hermes.sqlite3")},
        },
    )


async def _last_prompt(home: Path, workspace: Path) -> tuple[str, list[tuple[bytes, str]], int]:
    """Return the newest active user row's text and images, and how many user rows exist."""
    kernel = _kernel(home)
    async with kernel.running():
        session = await kernel.open_session(SID, source="cli", owner="t", cwd=workspace)
        rows = [r for r in await session.history(include_archived=True) if r.role == "user"]
        await session.close()
    last = [r for r in rows if r.active][-1]
    images = [(p.data or b"", p.mime) for p in last.parts if isinstance(p, ImagePart)]
    return last.content, images, len(rows)


async def test_retry_resends_images_on_cli_tui_and_acp(tmp_path: Path) -> None:
    home, workspace = make_home(tmp_path)
    kernel = _kernel(home)
    async with kernel.running():
        session = await kernel.open_session(SID, source="cli", owner="t", cwd=workspace)
        prompt = (TextPart("what is in these?"), ImagePart(data=PNG), ImagePart(data=JPEG, mime="image/jpeg"))
        turn = await session.submit(prompt, owner="t")
        assert [e async for e in turn.events() if isinstance(e, TurnCompleted)]
        await session.close()
    expected = [(PNG, "image/png"), (JPEG, "image/jpeg")]
    assert await _last_prompt(home, workspace) == ("what is in these?", expected, 1)

    # CLI: the command's send result runs as the turn, with the stored parts.
    done = run_hermes(home, "run", "--session", SID, "/retry", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "You said: what is in these?" in done.stdout
    assert await _last_prompt(home, workspace) == ("what is in these?", expected, 2)

    # TUI: the send directive leaves the images pending; the host's prompt.submit takes them.
    tui = start_tui(home)
    try:
        tui.call("session.resume", session_id=SID)
        directive = tui.call("command.dispatch", session_id=SID, command="/retry")
        assert directive["type"] == "send" and directive["message"] == "what is in these?"
        assert directive["display"]["images"] == 2
        assert tui.turn(SID, directive["message"])["text"] == "You said: what is in these?"
        assert tui.call("session.close", session_id=SID) == {"closed": True}
    finally:
        tui.close()
    assert await _last_prompt(home, workspace) == ("what is in these?", expected, 3)

    # ACP: a /retry prompt runs the resent turn itself.
    async with acp_agent(home, workspace) as agent:
        await agent.request("session/load", {"sessionId": SID, "cwd": str(workspace), "mcpServers": []})
        said = await acp_reply(agent, SID, "/retry")
        assert "(with 2 images)" in said and said.endswith("You said: what is in these?")
        await agent.request("session/close", {"sessionId": SID})
    assert await _last_prompt(home, workspace) == ("what is in these?", expected, 4)
