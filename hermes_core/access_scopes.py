"""The scope table: which key scope each HTTP route, console action and TUI-over-WebSocket method
needs (docs/reference/api-server.md#the-scope-table).

One table for every surface, so a reviewer reads one place. A route or method that is not listed
is refused (HTTP 403 ``scope_unmapped``, JSON-RPC ``4031``), whatever the key: adding a route
without deciding its scope cannot open it. ``PUBLIC`` entries need no key (health, the OpenAPI
document, the console's page and sign-in, the browser-control socket, which checks its own
ticket). ``admin`` holds every scope.
"""

from __future__ import annotations

from typing import Final

PUBLIC: Final = "public"
OBSERVE: Final = "observe"
CONTROL: Final = "control"
APPROVE: Final = "approve"
ADMIN: Final = "admin"

#: (method, route template) -> scope, for ``hermes api`` (HEAD takes GET's entry).
HTTP_ROUTES: dict[tuple[str, str], str] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/v1/health"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC,
    ("GET", "/health/detailed"): OBSERVE,
    ("GET", "/v1/models"): OBSERVE,
    ("GET", "/v1/models/{model}"): OBSERVE,
    ("GET", "/api/model/options"): OBSERVE,
    ("GET", "/v1/capabilities"): OBSERVE,
    ("POST", "/v1/chat/completions"): CONTROL,
    ("POST", "/v1/responses"): CONTROL,
    ("GET", "/v1/responses/{response_id}"): OBSERVE,
    ("DELETE", "/v1/responses/{response_id}"): CONTROL,
    ("GET", "/v1/responses/{response_id}/input_items"): OBSERVE,
    ("POST", "/v1/responses/{response_id}/cancel"): CONTROL,
    ("POST", "/v1/runs"): CONTROL,
    ("GET", "/v1/runs"): OBSERVE,
    ("GET", "/v1/runs/{run_id}"): OBSERVE,
    ("GET", "/v1/runs/{run_id}/events"): OBSERVE,
    ("POST", "/v1/runs/{run_id}/steer"): CONTROL,
    ("POST", "/v1/runs/{run_id}/approval"): APPROVE,
    ("POST", "/v1/runs/{run_id}/stop"): CONTROL,
    ("POST", "/v1/browser-control/register"): CONTROL,
    ("GET", "/v1/browser-control/ws"): PUBLIC,  # the one-time ticket from /register is the credential
    ("GET", "/v1/keys"): ADMIN,
    ("POST", "/v1/keys"): ADMIN,
    ("DELETE", "/v1/keys/{key_id}"): ADMIN,
}

#: (method, route template) -> scope, for the console (``hermes api --console``). The page, its
#: assets and the sign-in calls are public; each API action needs the signed-in key's scope.
CONSOLE_ACTIONS: dict[tuple[str, str], str] = {
    ("GET", "/console"): PUBLIC,
    ("GET", "/console/"): PUBLIC,
    ("GET", "/console/runs/{run_id}"): PUBLIC,
    ("GET", "/console/static/{name}"): PUBLIC,
    ("POST", "/console/api/session"): PUBLIC,
    ("GET", "/console/api/session"): PUBLIC,
    ("DELETE", "/console/api/session"): PUBLIC,
    ("GET", "/console/api/model/options"): OBSERVE,
    ("GET", "/console/api/runs"): OBSERVE,
    ("POST", "/console/api/runs"): CONTROL,
    ("GET", "/console/api/runs/{run_id}"): OBSERVE,
    ("GET", "/console/api/runs/{run_id}/events"): OBSERVE,
    ("POST", "/console/api/runs/{run_id}/approval"): APPROVE,
    ("POST", "/console/api/runs/{run_id}/steer"): CONTROL,
    ("POST", "/console/api/runs/{run_id}/stop"): CONTROL,
}

_TUI_OBSERVE = (
    "billing.charge_status billing.state commands.catalog command.resolve complete.path complete.slash "
    "config.get delegation.status gateway.ping learning.detail learning.frames model.options "
    "pet.cells pet.gallery pet.info pet.info.meta rollback.diff rollback.list session.active_list "
    "session.events.since session.history session.list session.most_recent session.status "
    "session.usage setup.status spawn_tree.list spawn_tree.load subagent.list subagent.tail "
    "subscription.preview subscription.state usage.bars"
)
_TUI_CONTROL = (
    "clipboard.paste command.dispatch delegation.pause image.attach input.detect_drop "
    "learning.delete learning.edit paste.collapse pet.select process.stop prompt.background "
    "prompt.submit rollback.restore secret.respond session.activate session.branch session.close "
    "session.compress session.create session.delete session.interrupt session.resume session.save "
    "session.steer session.title session.undo slash.exec spawn_tree.save subagent.interrupt "
    "subagent.steer sudo.respond terminal.resize voice.record voice.toggle"
)
_TUI_APPROVE = "approval.respond clarify.respond"
_TUI_ADMIN = (
    "billing.auto_reload billing.charge billing.step_up browser.manage cli.exec config.set "
    "model.disconnect model.save_key plugins.manage reload.env reload.mcp shell.exec skills.manage "
    "skills.reload subscription.change subscription.resume subscription.upgrade tools.configure"
)

#: method -> scope, for ``hermes tui --ws`` connections authenticated with a stored key.
TUI_METHODS: dict[str, str] = {
    **dict.fromkeys(_TUI_OBSERVE.split(), OBSERVE),
    **dict.fromkeys(_TUI_CONTROL.split(), CONTROL),
    **dict.fromkeys(_TUI_APPROVE.split(), APPROVE),
    **dict.fromkeys(_TUI_ADMIN.split(), ADMIN),
}


def route_scope(method: str, template: str) -> str | None:
    """Return the scope of an HTTP route or console action, or None when it is not in the table."""
    verb = "GET" if method == "HEAD" else method
    key = (verb, template)
    return HTTP_ROUTES.get(key) or CONSOLE_ACTIONS.get(key)


def method_scope(method: str) -> str | None:
    """Return the scope of a TUI-over-WebSocket method, or None when it is not in the table."""
    return TUI_METHODS.get(method)
