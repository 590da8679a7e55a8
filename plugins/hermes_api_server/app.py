"""Build the aiohttp application: routes, middleware and signals."""

from __future__ import annotations

from aiohttp import web

from hermes_api_server import (
    chat,
    discovery,
    openapi,
    response_cancel,
    response_input,
    responses,
    runs_http,
)
from hermes_api_server.middleware import front_middleware, on_prepare
from hermes_api_server.state import STATE, ServerState


def build_app(state: ServerState) -> web.Application:
    """Return the application serving every route of docs/reference/api-server.md."""
    app = web.Application(middlewares=[front_middleware], client_max_size=state.settings.max_body_bytes)
    app[STATE] = state
    app.on_response_prepare.append(on_prepare)
    r = app.router
    r.add_get("/health", discovery.health)
    r.add_get("/v1/health", discovery.health)
    r.add_get("/health/detailed", discovery.health_detailed)
    r.add_get("/v1/models", discovery.list_models)
    r.add_get("/v1/models/{model}", discovery.retrieve_model)
    r.add_get("/api/model/options", discovery.model_options)
    r.add_get("/v1/capabilities", discovery.capabilities)
    r.add_get("/openapi.json", openapi.document)
    r.add_post("/v1/chat/completions", chat.create_chat_completion)
    r.add_post("/v1/responses", responses.create_response)
    r.add_get("/v1/responses/{response_id}", responses.retrieve_response)
    r.add_delete("/v1/responses/{response_id}", responses.delete_response)
    r.add_get("/v1/responses/{response_id}/input_items", response_input.list_input_items)
    r.add_post("/v1/responses/{response_id}/cancel", response_cancel.cancel_response)
    r.add_post("/v1/runs", runs_http.create_run)
    r.add_get("/v1/runs", runs_http.list_runs)
    r.add_get("/v1/runs/{run_id}", runs_http.get_run)
    r.add_get("/v1/runs/{run_id}/events", runs_http.run_events)
    r.add_post("/v1/runs/{run_id}/steer", runs_http.steer_run)
    r.add_post("/v1/runs/{run_id}/approval", runs_http.run_approval)
    r.add_post("/v1/runs/{run_id}/stop", runs_http.stop_run)
    from hermes_api_server import browser_control, keys_http

    r.add_get("/v1/keys", keys_http.list_keys)
    r.add_post("/v1/keys", keys_http.create_key)
    r.add_delete("/v1/keys/{key_id}", keys_http.revoke_key)

    r.add_post("/v1/browser-control/register", browser_control.register)
    r.add_get("/v1/browser-control/ws", browser_control.connect)
    if state.settings.console:
        from hermes_api_server.console.routes import install

        install(app, state)
    return app
