"""The console's subagent panel in headless Chromium (docs/console.md#subagents): child agents a
run starts with ``delegate_task``, driven offline by mock directives in their goals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.api.api_helpers import Server, start_server
from tests.api.conftest import BASE_CONFIG
from tests.api.console.browser import CuttingProxy, browser, shot  # noqa: F401 (fixture)
from tests.api.console.helpers import TWO_KEYS
from tests.api.console.test_console_browser import (  # noqa: F401 (fixture)
    page,
    sign_in,
    start,
    wait_js,
    wait_terminal,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.timeout(120)


def delegate(**args: Any) -> str:
    return f"[[tool delegate_task {json.dumps(args)}]]"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("console-subagents")
    server = start_server(home, config=TWO_KEYS + "[delegation]\nmax_spawn_depth = 2\n" + BASE_CONFIG)
    yield server
    server.stop()


def child(view: Page, goal: str) -> Any:
    return view.locator(".subagent", has=view.locator(f".sub-goal:text-is('{goal}')"))


def test_a_batch_of_two_children_shows_both_with_their_summaries(page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    tasks = [{"goal": "alpha [[tokens 2]]"}, {"goal": "beta [[tokens 3]] [[delay 30]]"}]
    start(page, delegate(tasks=tasks))
    wait_terminal(page, "completed")
    assert page.locator("#subagents .subagent").count() == 2
    alpha, beta = child(page, tasks[0]["goal"]), child(page, tasks[1]["goal"])
    assert alpha.locator(".sub-summary").text_content() == "t0 t1"
    assert beta.locator(".sub-summary").text_content() == "t0 t1 t2"
    for card, index in ((alpha, 1), (beta, 2)):
        assert card.locator(".sub-status").text_content() == "completed"
        meta = card.locator(".sub-meta").text_content() or ""
        assert meta.startswith(f"task {index} of 2 · mock:echo · depth 1"), meta
        assert "tokens in " in (card.locator(".sub-usage").text_content() or "")
        assert card.locator(".sub-facts").text_content().startswith("0 tool calls")
    shot(page, "11-subagents-batch")


def test_a_childs_approval_is_answered_from_the_page_and_its_tool_runs(page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    goal = '[[tool terminal {"command": "echo hermes-guard-test from-the-child"}]] check'
    start(page, delegate(goal=goal))
    card = page.locator(".event.approval.open")
    card.wait_for()
    assert card.locator(".asked-by").text_content() == "Asked by subagent: " + goal
    the_child = child(page, goal)
    assert the_child.locator(".sub-asks").text_content() == "waiting for approval"
    assert the_child.locator(".sub-step.running code").text_content() == "terminal"
    assert page.text_content("#status") == "waiting_for_approval"
    shot(page, "12-subagent-approval")
    card.locator("button[data-choice=once]").click()
    page.wait_for_selector(".event.approval.answered:has-text('answered: once')")
    wait_terminal(page, "completed")
    assert the_child.locator(".sub-asks").text_content() == ""
    assert the_child.locator(".sub-step.done .step-state").text_content() == "done"
    assert the_child.locator(".sub-summary").text_content() == "Done: hermes-guard-test from-the-child"


def test_reload_and_a_dropped_stream_mid_delegation_show_each_child_once(page: Page, srv: Server) -> None:  # noqa: F811
    proxy = CuttingProxy(srv.port)
    try:
        sign_in(page, srv, base=f"http://127.0.0.1:{proxy.port}")
        tasks = [{"goal": f"slow {n} [[tokens 200]] [[delay 40]]"} for n in (1, 2)]
        start(page, delegate(tasks=tasks))
        page.wait_for_selector(".subagent .sub-text:has-text('t3')")
        assert page.locator(".event.terminal").count() == 0  # the children are still working
        proxy.cut()
        wait_js(page, "window.hermesConsole.run.reconnects > 0")
        seen = len(page.evaluate("window.hermesConsole.run.seqs"))
        wait_js(page, f"window.hermesConsole.run.seqs.length > {seen}")  # the stream resumed
        assert page.locator(".event.terminal").count() == 0
        assert page.locator(".subagent").count() == 2  # resumed with Last-Event-ID: no child twice
        page.reload()
        page.wait_for_selector(".subagent")
        facts = wait_terminal(page, "completed")
        assert facts["reconnects"] == 0  # the reloaded page needed no second try
        assert page.locator(".subagent").count() == 2
        for task in tasks:
            assert child(page, task["goal"]).locator(".sub-summary").text_content() == " ".join(
                f"t{i}" for i in range(200)
            )
    finally:
        proxy.close()


def test_a_childs_goal_with_markup_is_shown_as_text(page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    goal = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> [[tokens 2]]'
    start(page, delegate(goal=goal))
    wait_terminal(page, "completed")
    assert page.locator(".sub-goal").text_content() == goal
    assert page.evaluate("window.pwned") is None
    assert page.locator("#subagents script, #subagents img").count() == 0
    shot(page, "13-subagent-markup-as-text")


def test_an_orchestrators_children_are_nested_under_it(page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    inner = delegate(goal="leaf [[tokens 2]]")
    start(page, delegate(goal=f"lead {inner}", role="orchestrator"))
    wait_terminal(page, "completed")
    lead = page.locator("#subagents .sub-list > .subagent")
    assert lead.count() == 1
    leaf = lead.locator(".sub-children > .subagent")
    assert leaf.locator(".sub-goal").text_content() == "leaf [[tokens 2]]"
    assert leaf.locator(".sub-meta").text_content().startswith("task · mock:echo · depth 2")  # type: ignore[union-attr]
    assert leaf.locator(".sub-summary").text_content() == "t0 t1"
    assert lead.locator(":scope > .sub-steps .sub-step.done code").text_content() == "delegate_task"
    shot(page, "14-subagents-nested")


def test_a_child_that_fails_shows_its_error(page: Page, srv: Server) -> None:  # noqa: F811
    sign_in(page, srv)
    tasks = [{"goal": "fine [[tokens 2]]"}, {"goal": "broken [[error quota exhausted]]"}]
    start(page, delegate(tasks=tasks))
    wait_terminal(page, "completed")
    broken = child(page, tasks[1]["goal"])
    assert broken.locator(".sub-status").text_content() == "error"
    assert "quota exhausted" in (broken.locator(".sub-error").text_content() or "")
    assert broken.locator(".sub-summary").count() == 0
    assert child(page, tasks[0]["goal"]).locator(".sub-summary").text_content() == "t0 t1"
