"""Session settings methods (docs/reference/acp.md#setting-the-mode-and-options, #legacy-models): set_mode,
set_config_option, legacy set_model."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hermes_acp import params as P
from hermes_acp.errors import invalid
from hermes_acp.options import MODES, OFF_MODE, model_choices
from hermes_core.rpc import after_response

log = logging.getLogger("hermes_acp")

if TYPE_CHECKING:
    from hermes_acp.conn import AcpConnection
    from hermes_acp.state import AcpSession
    from hermes_core import Session


def _mode_ids(current: str) -> list[str]:
    ids = [m for m, _ in MODES]
    return [*ids, OFF_MODE[0]] if current == OFF_MODE[0] else ids


async def _apply_mode(conn: AcpConnection, acp_session: AcpSession, mode: str, field: str) -> None:
    core = acp_session.core
    allowed = [m for m, _ in MODES]
    if mode not in allowed and not (mode == OFF_MODE[0] and core.profile == OFF_MODE[0]):
        raise invalid(field, f"unknown mode {mode!r}; one of: {', '.join(_mode_ids(core.profile))}")
    await core.set_profile(mode)


async def config_update(conn: AcpConnection, core: Session) -> dict[str, Any]:
    """Return a ``config_option_update`` for the session's current state.

    :param conn: the connection.
    :param core: the core session.
    :returns: the update object.
    """
    from hermes_acp.options import config_options

    model, choices = await model_choices(conn.kernel, core)
    return {
        "sessionUpdate": "config_option_update",
        "configOptions": config_options(core.profile, model, choices),
    }


async def probe_custom_models(conn: AcpConnection, acp_session: AcpSession) -> None:
    """Fetch the model list of the session's provider when it is a user-defined endpoint.

    The catalog's policy on open (docs/reference/core.md#providers-and-models): only the current
    provider is probed, and only a custom one. Run after the session response; when the list
    grew, a ``config_option_update`` offers the server's models.

    :param conn: the connection.
    :param acp_session: the session just opened.
    """
    from hermes_core import ModelRef

    core = acp_session.core
    kernel = conn.kernel
    provider = ModelRef.split(core.info().model).provider
    if not provider or not kernel.providers.has(provider) or not kernel.providers.is_user_defined(provider):
        return
    before = await model_choices(kernel, core)
    try:
        await kernel.model_catalog(session=core)
    except Exception as exc:  # the picker keeps its offline list
        log.debug("probing %s failed: %s", provider, exc)
        return
    if not acp_session.closed and await model_choices(kernel, core) != before:
        conn.update(acp_session.id, await config_update(conn, core))


def _after_send(conn: AcpConnection, session_id: str, *updates: dict[str, Any]) -> None:
    def hook() -> None:
        for update in updates:
            conn.update(session_id, update)

    after_response(hook)


async def set_mode(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Switch the approval profile (docs/reference/acp.md#setting-the-mode-and-options).

    :param conn: the connection.
    :param params: ``{sessionId, modeId}``.
    :returns: ``{}``.
    """
    args = P.parse(P.SetModeParams, params)
    acp_session = conn.session(args.sessionId)
    await _apply_mode(conn, acp_session, args.modeId, "modeId")
    _after_send(conn, acp_session.id, await config_update(conn, acp_session.core))
    return {}


async def _switch_model(conn: AcpConnection, core: Session, ref: str, field: str) -> None:
    from hermes_core import InvalidValue, ModelAmbiguous, ModelNotFound

    try:
        await core.switch_model(ref)
    except ModelAmbiguous as exc:
        raise invalid(field, str(exc), candidates=list(exc.candidates)) from None
    except ModelNotFound as exc:
        raise invalid(field, str(exc), candidates=list(exc.candidates)) from None
    except InvalidValue as exc:
        raise invalid(field, str(exc)) from None


async def set_config_option(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Set the ``mode`` or ``model`` option; answer the complete option list
    (docs/reference/acp.md#setting-the-mode-and-options).

    :param conn: the connection.
    :param params: ``{sessionId, configId, value}``.
    :returns: ``{configOptions}``.
    """
    args = P.parse(P.SetConfigOptionParams, params)
    acp_session = conn.session(args.sessionId)
    core = acp_session.core
    if args.type is not None and args.type != "select":
        raise invalid("type", f"option type {args.type!r} is not supported")
    if not isinstance(args.value, str):
        raise invalid("value", "value must be a string")
    if args.configId == "mode":
        await _apply_mode(conn, acp_session, args.value, "value")
        update = await config_update(conn, core)
        _after_send(
            conn, acp_session.id, {"sessionUpdate": "current_mode_update", "currentModeId": core.profile}
        )
        return {"configOptions": update["configOptions"]}
    if args.configId == "model":
        _, choices = await model_choices(conn.kernel, core)
        if args.value not in {v for v, _ in choices}:
            raise invalid("value", f"unknown model {args.value!r}")
        await _switch_model(conn, core, args.value, "value")
        update = await config_update(conn, core)
        return {"configOptions": update["configOptions"]}
    raise invalid("configId", f"unknown config option {args.configId!r}; one of: mode, model")


async def set_model(conn: AcpConnection, params: dict[str, Any]) -> dict[str, Any]:
    """Legacy ``session/set_model`` (docs/reference/acp.md#legacy-models).

    :param conn: the connection.
    :param params: ``{sessionId, modelId}``.
    :returns: ``{}``.
    """
    args = P.parse(P.SetModelParams, params)
    acp_session = conn.session(args.sessionId)
    await _switch_model(conn, acp_session.core, args.modelId, "modelId")
    _after_send(conn, acp_session.id, await config_update(conn, acp_session.core))
    return {}
