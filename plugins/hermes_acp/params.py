"""Pydantic models of the inbound params (``extra="ignore"``: ACP requires ignoring unknown fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from hermes_acp.errors import invalid

M = TypeVar("M", bound=BaseModel)


class _Params(BaseModel):
    # defer_build: each model builds its validator on first use, so the first session/new does
    # not pay for the params of methods it does not call.
    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)


class AuthenticateParams(_Params):
    methodId: str


class NewSessionParams(_Params):
    cwd: str
    mcpServers: list[dict[str, Any]]
    additionalDirectories: list[str] | None = None


class LoadSessionParams(NewSessionParams):
    sessionId: str


class ResumeSessionParams(_Params):
    sessionId: str
    cwd: str
    mcpServers: list[dict[str, Any]] | None = None
    additionalDirectories: list[str] | None = None


class ListSessionsParams(_Params):
    cwd: str | None = None
    cursor: str | None = None


class SessionParams(_Params):
    sessionId: str


class SetModeParams(SessionParams):
    modeId: str


class SetConfigOptionParams(SessionParams):
    configId: str
    value: Any = None
    type: str | None = None


class SetModelParams(SessionParams):
    modelId: str


class PromptParams(SessionParams):
    prompt: list[dict[str, Any]]


def parse(model: type[M], params: dict[str, Any]) -> M:
    """Validate params, turning the first problem into a ``-32602`` naming its field.

    :param model: the params model.
    :param params: the raw params object.
    :returns: the validated params.
    :raises RpcError: invalid params.
    """
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = [str(p) for p in first.get("loc", ())]
        field = loc[0] if loc else "params"
        where = ".".join(loc) or "params"
        raise invalid(field, f"{where}: {first.get('msg', 'invalid')}") from None


def check_cwd(cwd: str, field: str = "cwd") -> Path:
    """Normalise a workspace path: absolute, symlinks resolved, an existing directory.

    :param cwd: the path from the params.
    :param field: the field name for errors.
    :returns: the resolved path.
    :raises RpcError: not absolute, not a directory, or holding a NUL character.
    """
    from hermes_core import WorkspaceError, WorkspaceProblem, check_workspace

    try:
        return check_workspace(cwd, field=field)
    except WorkspaceError as exc:
        if exc.problem is WorkspaceProblem.NOT_A_DIRECTORY:
            raise invalid(field, f"{field} is not an existing directory") from None
        if exc.problem is WorkspaceProblem.NOT_A_PATH:
            raise invalid(field, f"{field} is not a valid path: it contains a NUL character") from None
        raise invalid(field, f"{field} must be an absolute path") from None


def check_directories(extra: list[str] | None) -> None:
    """Refuse non-empty ``additionalDirectories`` (not supported, docs/reference/acp.md#session-ids-and-cwd).

    :param extra: the field value.
    :raises RpcError: non-empty.
    """
    if extra:
        raise invalid("additionalDirectories", "additionalDirectories are not supported")
