"""``/retry`` gives back the images of the prompt it removes, as the core stored them.

The prompt is stored in a real SQLite file by one kernel and retried by another (a user's next
process), so the images come from storage, not memory. The mock models have no vision, so the
resent turn runs on the text and reports ``images_dropped`` (docs/reference/core.md#images); the images are
still stored with the new user row, ready for a model that can see them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_core import CommandResult, ImagePart, Kernel, Session, TextPart, TurnCompleted
from hermes_core.testing import make_kernel

from .conftest import ALL_PLUGINS
from .helpers import data

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0 not really a jpeg"


def _kernel(db: Path) -> Kernel:
    return make_kernel(
        entry_points=[*ALL_PLUGINS, "sqlite"],
        settings={"model": "mock:echo", "storage": {"backend": "sqlite", "path": str(db)}},
    )


async def _turn(session: Session, content: Any) -> tuple[str, tuple[str, ...]]:
    """Run one turn; return its final text and warnings."""
    turn = await session.submit(content, owner="t")
    done = [e async for e in turn.events() if isinstance(e, TurnCompleted)]
    assert (await turn.outcome).status == "complete"
    return done[-1].text, tuple(done[-1].warnings)


async def _retry(kernel: Kernel, session: Session) -> CommandResult:
    """Dispatch ``/retry``, which must answer a ``send`` directive."""
    result = await kernel.dispatch_slash(session, "/retry", surface="tui")
    assert result is not None and result.kind == "send"
    return result


async def test_retry_sends_the_stored_images_again(tmp_path: Path, workspace: Path) -> None:
    db = tmp_path / "hermes.sqlite3"
    first = _kernel(db)
    async with first.running():
        session = await first.open_session("retry-images", source="cli", owner="t", cwd=workspace)
        await _turn(session, "a plain one")
        prompt = (TextPart("what is in these?"), ImagePart(data=PNG), ImagePart(data=JPEG, mime="image/jpeg"))
        assert await _turn(session, prompt) == ("You said: what is in these?", ("images_dropped",))
        await session.close()

    second = _kernel(db)
    async with second.running():
        session = await second.open_session("retry-images", source="cli", owner="t", cwd=workspace)
        result = await _retry(second, session)
        assert result.message == "what is in these?"
        assert result.output == "Sending your last message again (with 2 images): what is in these?"
        assert result.display == {"text": "what is in these?", "retry": True, "images": 2}
        facts = data(result)
        assert facts["images"] == 2
        parts = facts["parts"]
        assert [p.text for p in parts if isinstance(p, TextPart)] == ["what is in these?"]
        assert [(p.data, p.mime) for p in parts if isinstance(p, ImagePart)] == [
            (PNG, "image/png"),
            (JPEG, "image/jpeg"),
        ]
        # What a transport does with the directive: submit the parts instead of the bare text.
        assert await _turn(session, parts) == ("You said: what is in these?", ("images_dropped",))
        rows = await session.history(include_archived=True)
        users = [r for r in rows if r.role == "user"]
        assert [(r.content, r.active) for r in users] == [
            ("a plain one", True),
            ("what is in these?", False),
            ("what is in these?", True),
        ]
        resent = [(p.data, p.mime) for p in users[-1].parts if isinstance(p, ImagePart)]
        assert resent == [(PNG, "image/png"), (JPEG, "image/jpeg")]
        await session.close()


async def test_retry_of_a_text_prompt_has_no_parts(kernel: Kernel, session: Session) -> None:
    await _turn(session, "words only")
    result = await _retry(kernel, session)
    assert result.output == "Sending your last message again: words only"
    assert result.display == {"text": "words only", "retry": True}
    assert (data(result)["parts"], data(result)["images"]) == ((), 0)
