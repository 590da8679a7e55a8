"""The console in headless Chromium against a real ``hermes api --console`` on loopback with the
mock provider (docs/console.md): what a person sees and does."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.api.api_helpers import Server, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.console.browser import CuttingProxy, browser, shot  # noqa: F401 (fixture)
from tests.api.console.helpers import KEY_A, KEY_B, TWO_KEYS
from tests.timing import eventually_sync, scaled

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.timeout(120)
GUARDED_ECHO = '[[tool terminal {"command":"echo hermes-guard-test"}]] check'


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("console-home")
    (home / "projects" / "demo").mkdir(parents=True)
    roots = f"workspace_roots = [{json.dumps(str(home / 'projects'))}]\n"
    server = start_server(home, config=TWO_KEYS + roots + BASE_CONFIG)
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    context.set_default_timeout(scaled(20_000))
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, errors


def sign_in(page: Page, srv: Server, key: str = KEY_A, base: str | None = None) -> None:
    page.goto((base or srv.base) + "/console")
    page.fill("#key", key)
    page.click("#signin-submit")
    page.wait_for_selector("#runs-body")


def start(page: Page, prompt: str, model: str | None = "mock:echo") -> str:
    page.fill("#prompt", prompt)
    if model:
        page.wait_for_selector(f"#model option[value='{model}']", state="attached")
        page.select_option("#model", model)
    page.click("#start-submit")
    page.wait_for_url(re.compile(r"/console/runs/run_[0-9a-f]+$"))
    return page.url.rsplit("/", 1)[1]


def wait_terminal(page: Page, status: str) -> dict[str, Any]:
    page.wait_for_selector(f".event.terminal.{status}", timeout=scaled(40_000))
    facts: dict[str, Any] = page.evaluate("window.hermesConsole.run")
    assert facts["duplicates"] == 0 and facts["missing"] == 0, facts
    assert facts["seqs"] == list(range(1, len(facts["seqs"]) + 1)), facts["seqs"]
    assert page.text_content("#status") == status
    return facts


def wait_js(page: Page, expression: str) -> None:
    """Poll an expression through the debugger (the console's CSP forbids Playwright's own eval
    that ``wait_for_function`` uses)."""
    eventually_sync(lambda: page.evaluate(expression), timeout=20, interval=0.02, what=expression)


def tokens(n: int) -> str:
    return " ".join(f"t{i}" for i in range(n))


def test_wrong_key_is_refused_and_sign_in_sets_only_a_strict_cookie(page: Page, srv: Server) -> None:
    page.goto(srv.base + "/console")
    page.wait_for_selector("#signin")
    shot(page, "01-sign-in")
    page.fill("#key", "hk_wrong_key_for_this_console_00")
    page.click("#signin-submit")
    page.wait_for_selector("#signin-error:has-text('That key is not accepted.')")
    assert page.context.cookies() == []
    page.fill("#key", KEY_A)
    page.click("#signin-submit")
    page.wait_for_selector("#runs-body")
    assert KEY_A not in page.url and KEY_A not in page.content()
    (cookie,) = page.context.cookies()
    assert (cookie["name"], cookie["path"], cookie["httpOnly"], cookie["sameSite"]) == (
        "hermes_console",
        "/console",
        True,
        "Strict",
    )
    assert page.evaluate("document.cookie") == ""
    page.click("#logout")
    page.wait_for_selector("#signin")
    page.goto(srv.base + "/console")
    page.wait_for_selector("#signin")


def test_start_a_run_and_watch_its_text_stream(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    options = page.locator("#model option").all_text_contents()
    assert "mock:echo" in options and "mock:history" in options
    run_id = start(page, "[[tokens 200]] [[delay 40]] go")
    page.wait_for_selector(".event.message:has-text('t5')")
    assert page.locator(".event.terminal").count() == 0  # text shows while the run is still going
    shot(page, "03-streaming")
    facts = wait_terminal(page, "completed")
    assert facts["text"] == tokens(200)
    assert page.text_content(".event.message") == tokens(200)
    assert "output tokens: 200" in page.text_content("#usage")
    page.click("#home")
    row = page.locator(f"tr[data-run-id='{run_id}']")
    row.locator(".badge.completed").wait_for()
    assert "mock:echo" in row.text_content()
    shot(page, "02-runs-list")


def test_approve_a_tool_and_see_it_run(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, GUARDED_ECHO)
    card = page.locator(".event.approval.open")
    card.wait_for()
    assert page.text_content("#status") == "waiting_for_approval"
    assert card.locator("button").all_text_contents() == [
        "Allow once",
        "Allow for session",
        "Always allow",
        "Deny",
    ]
    assert re.search(r"expires in \d+", card.locator(".expiry").text_content() or "")
    shot(page, "04-approval")
    card.locator("button[data-choice=once]").click()
    page.wait_for_selector(".event.approval.answered:has-text('answered: once')")
    wait_terminal(page, "completed")
    assert "done in" in page.text_content(".event.tool")
    assert page.text_content(".event.message") == "Done: hermes-guard-test"


def test_deny_a_tool_and_see_the_refusal(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, GUARDED_ECHO)
    page.locator(".event.approval.open button[data-choice=deny]").click()
    page.wait_for_selector(".event.approval.answered:has-text('answered: deny')")
    wait_terminal(page, "completed")
    assert "failed in" in page.text_content(".event.tool")
    reply = page.text_content(".event.message") or ""
    assert reply.startswith("Done: The user declined this tool call."), reply
    shot(page, "05-denied")


def test_steer_during_a_tool_is_delivered(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, '[[tool terminal {"command":"sleep 3"}]] work')
    page.wait_for_selector(".event.tool.running")
    page.fill("#steer", "use fewer words")
    page.press("#steer", "Enter")
    page.wait_for_selector(".event.steer:has-text('use fewer words')")
    page.wait_for_selector(".event.steer.delivered .steer-state:has-text('delivered')")
    shot(page, "06-steer-delivered")
    wait_terminal(page, "completed")
    assert (page.text_content(".event.message") or "").endswith("/ Steer: use fewer words")


def test_steer_that_arrives_too_late_is_returned_as_pending(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, "[[tokens 100]] [[delay 50]] go")
    page.wait_for_selector(".event.message:has-text('t2')")
    page.fill("#steer", "keep it short")
    page.click("#steer-submit")
    wait_terminal(page, "completed")
    page.wait_for_selector(".event.steer.pending:has-text('returned as pending')")
    assert "keep it short" in page.text_content(".pending-steer")


def test_stop_a_run(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, "[[tokens 2000]] [[delay 20]] go")
    page.wait_for_selector(".event.message:has-text('t3')")
    page.click("#stop")
    facts = wait_terminal(page, "cancelled")
    assert page.is_disabled("#stop")
    assert len(facts["text"].split()) < 2000
    shot(page, "07-stopped")


def test_a_status_read_before_an_approval_does_not_hide_it(page: Page, srv: Server) -> None:
    """The page reads the run's status once as it opens; when that answer arrives after the live
    events (a slow request, a busy instance), it must not replace what the events showed."""
    sign_in(page, srv)
    held: list[Any] = []
    page.route(re.compile(r".*/console/api/runs/run_[0-9a-f]+$"), lambda route: held.append(route))
    start(page, GUARDED_ECHO)
    page.locator(".event.approval.open").wait_for()
    assert page.text_content("#status") == "waiting_for_approval"
    route = held[0]
    response = route.fetch()
    stale = {**response.json(), "status": "running"}  # what it said before the approval was asked
    route.fulfill(response=response, json=stale)
    page.wait_for_selector("#run-meta:has-text('session ')")
    assert page.text_content("#status") == "waiting_for_approval"


def test_reload_mid_run_resumes_without_gaps(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, "[[tokens 300]] [[delay 25]] go")
    page.wait_for_selector(".event.message:has-text('t10')")
    assert page.text_content("#status") == "running"
    page.reload()
    page.wait_for_selector(".event.started")
    facts = wait_terminal(page, "completed")
    assert facts["text"] == tokens(300)
    assert page.text_content(".event.message") == tokens(300)


def test_dropped_connection_resumes_with_last_event_id(page: Page, srv: Server) -> None:
    proxy = CuttingProxy(srv.port)
    try:
        base = f"http://127.0.0.1:{proxy.port}"
        sign_in(page, srv, base=base)
        start(page, "[[tokens 200]] [[delay 25]] go")
        page.wait_for_selector(".event.message:has-text('t10')")
        proxy.cut()
        wait_js(page, "window.hermesConsole.run.reconnects > 0")
        facts = wait_terminal(page, "completed")
        assert facts["text"] == tokens(200)
    finally:
        proxy.close()


def test_a_second_key_cannot_see_the_first_keys_runs(browser: Browser, page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    run_id = start(page, "mine [[tokens 3]]")
    wait_terminal(page, "completed")
    other = browser.new_context()
    try:
        second = other.new_page()
        sign_in(second, srv, KEY_B)
        second.wait_for_selector("#runs-body tr")
        assert second.locator(f"tr[data-run-id='{run_id}']").count() == 0
        second.goto(f"{srv.base}/console/runs/{run_id}")
        second.wait_for_selector("#notice:has-text('does not exist')")
        assert second.text_content("#status") == "not found"
        assert second.is_disabled("#stop") and second.is_disabled("#steer-submit")
        assert second.locator(".event").count() == 0
        shot(second, "08-other-key")
    finally:
        other.close()


def test_model_generated_script_is_shown_as_text(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    hostile = '<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2"> **bold** `code`'
    start(page, hostile)
    wait_terminal(page, "completed")
    message = page.locator(".event.message")
    shown = "You said: " + hostile.replace("**bold**", "bold").replace("`code`", "code")
    assert message.text_content() == shown
    assert page.evaluate("window.pwned") is None
    assert message.locator("script, img").count() == 0
    assert message.locator("strong").text_content() == "bold"
    assert message.locator("code").text_content() == "code"
    shot(page, "09-script-as-text")


def test_tool_output_and_diff_are_shown(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    write = '[[tool write_file {"path": "notes.md", "content": "alpha\\nbeta\\n"}]]'
    run = '[[tool terminal {"command": "echo progress-line"}]]'
    start(page, f"{write} {run} go")
    wait_terminal(page, "completed")
    assert page.locator(".event.tool .diff").count() == 1
    diff = page.locator(".event.tool .diff")
    assert diff.locator(".add").all_text_contents() == ["+alpha\n", "+beta\n"]
    assert "+++ b/notes.md" in (diff.text_content() or "")
    assert page.locator(".tool-output", has_text="progress-line").count() == 1
    shot(page, "10-tool-output-and-diff")


def test_an_unanswered_approval_expires_as_denied(page: Page, tmp_path: Path) -> None:
    quick = start_server(tmp_path / "home", config=TWO_KEYS + "[approvals]\ntimeout_s = 3\n" + BASE_CONFIG)
    try:
        sign_in(page, quick)
        start(page, GUARDED_ECHO)
        card = page.locator(".event.approval.open")
        card.wait_for()
        assert re.search(r"expires in [0-3]s", card.locator(".expiry").text_content() or "")
        page.wait_for_selector(".event.approval.expired:has-text('expired (timeout): denied')")
        assert page.locator(".event.approval button:enabled").count() == 0
        wait_terminal(page, "completed")
        assert "failed in" in (page.text_content(".event.tool") or "")
    finally:
        quick.stop()


def test_markdown_renders_structure_and_never_markup_or_script_links(page: Page, srv: Server) -> None:
    page.goto(srv.base + "/console")
    page.wait_for_selector("#signin")
    rendered = page.evaluate(
        """async () => {
          const { renderMarkdown } = await import('/console/static/markdown.js');
          const show = (text) => {
            const box = document.createElement('div');
            box.append(renderMarkdown(text));
            return box.innerHTML;
          };
          return {
            blocks: show('# Title\\n\\n- one\\n- **two**\\n\\n1. first\\n\\n> quoted\\n\\n'
              + '```py\\nx = "<b>"\\n```'),
            inline: show('a `<i>code</i>` and *em* and [site](https://example.org/a)'),
            links: show('[bad](javascript:alert(1)) [data](data:text/html,x)'),
            html: show('<b onmouseover="x()">bold?</b> <iframe src="https://x"></iframe>'),
            open: show('```\\nunclosed <script>x</script>'),
          };
        }"""
    )
    assert rendered["blocks"] == (
        "<h3>Title</h3><ul><li>one</li><li><strong>two</strong></li></ul><ol><li>first</li></ol>"
        '<blockquote><p>quoted</p></blockquote><pre><code data-lang="py">x = "&lt;b&gt;"</code></pre>'
    )
    assert rendered["inline"] == (
        "<p>a <code>&lt;i&gt;code&lt;/i&gt;</code> and <em>em</em> and "
        '<a href="https://example.org/a" rel="noopener noreferrer nofollow" target="_blank">site</a></p>'
    )
    assert rendered["links"] == "<p>[bad](javascript:alert(1)) [data](data:text/html,x)</p>"
    assert rendered["html"] == (
        '<p>&lt;b onmouseover="x()"&gt;bold?&lt;/b&gt; &lt;iframe src="https://x"&gt;&lt;/iframe&gt;</p>'
    )
    assert rendered["open"] == "<pre><code>unclosed &lt;script&gt;x&lt;/script&gt;</code></pre>"


def test_a_long_fast_stream_shows_every_event_while_input_stays_usable(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    start(page, "[[tokens 4000]] [[delay 1]] go")
    page.wait_for_selector(".event.message")
    page.click("#steer")
    page.keyboard.type("still typing")
    assert page.input_value("#steer") == "still typing"
    facts = wait_terminal(page, "completed")
    assert facts["text"] == tokens(4000)
    assert page.text_content(".event.message") == tokens(4000)


def test_start_a_run_in_a_chosen_workspace(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    page.fill("#workspace", "/definitely/not/allowed")
    page.fill("#prompt", "hello")
    page.click("#start-submit")
    page.wait_for_selector("#start-error:has-text('workspace')")
    assert "/console/runs/" not in page.url
    project = srv.home / "projects" / "demo"
    page.fill("#workspace", str(project))
    start(page, '[[tool terminal {"command": "pwd"}]] where')
    wait_terminal(page, "completed")
    assert page.text_content(".tool-output") == f"{project.resolve()}\n"


def another_run(page: Page, than: str) -> str:
    """Wait until the page shows a run other than ``than`` (its view, not just its URL: the page
    moves to the new address first and builds the view after a request); return its id."""
    page.wait_for_url(
        lambda url: re.search(r"/console/runs/run_[0-9a-f]+$", url) is not None and than not in url
    )
    run_id = page.url.rsplit("/", 1)[1]
    wait_js(page, f"window.hermesConsole.run && window.hermesConsole.run.runId === {json.dumps(run_id)}")
    return run_id


def test_a_finished_run_offers_a_follow_up_in_the_same_session(page: Page, srv: Server) -> None:
    sign_in(page, srv)
    first = start(page, "[[tokens 150]] [[delay 40]] first", model="mock:history")
    page.wait_for_selector(".event.message:has-text('t1')")
    # While the run works the box steers it; text typed there as it ends is not lost.
    assert page.is_visible("#steer") and not page.is_visible("#followup")
    page.fill("#steer", "second")
    wait_terminal(page, "completed")
    page.wait_for_selector("#followup", state="visible")
    assert not page.is_visible("#steer") and not page.is_visible("#steer-submit")
    assert page.input_value("#followup") == "second" and page.is_enabled("#followup-submit")
    page.wait_for_selector("#run-meta:has-text('session ')")
    session = (page.text_content("#run-meta") or "").rsplit("session ", 1)[1]
    shot(page, "15-follow-up-offered")

    page.click("#followup-submit")
    second = another_run(page, first)
    facts = wait_terminal(page, "completed")
    # mock:history answers with every user turn of the session: the conversation continued.
    assert facts["text"] == "Turns: first | second", facts
    page.wait_for_selector(f"#run-meta:has-text('session {session}')")

    # The first run, opened again later, still offers the follow-up (and it continues the session).
    page.goto(f"{srv.base}/console/runs/{first}")
    page.wait_for_selector("#followup", state="visible")
    page.fill("#followup", "third")
    page.press("#followup", "Enter")
    assert another_run(page, first) != second
    facts = wait_terminal(page, "completed")
    assert facts["text"] == "Turns: first | second | third", facts
    shot(page, "16-follow-up-run")
