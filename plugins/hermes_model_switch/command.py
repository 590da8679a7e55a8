"""``/model``: parse the arguments, then show the choices or switch the session's model.

``/model`` alone shows the current model and the catalog (offline: it never waits on the
network). ``/model REF`` switches this session from the next turn on; ``--once`` switches only
the next turn; ``--global`` also saves ``model`` through the kernel's settings store. A bare or
family name (``claude-sonnet-4``) is resolved by the core, and the answer says what it resolved
to. Unknown and ambiguous references raise the core's ``ModelNotFound`` / ``ModelAmbiguous``
unchanged, and nothing is switched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hermes_core import CommandResult, CommandUsageError
from hermes_model_switch.listing import render_choices

if TYPE_CHECKING:
    from hermes_core import CommandContext, Session

Scope = Literal["session", "once", "global"]
FLAGS: dict[str, Scope] = {"--once": "once", "--global": "global"}
SCOPE_WORDS: dict[Scope, str] = {
    "session": "this session",
    "once": "next turn only",
    "global": "this session, and saved as the default model",
}


@dataclass(frozen=True, slots=True)
class ModelArgs:
    """What ``/model`` was asked to do: ``ref`` None means show the choices."""

    ref: str | None
    scope: Scope


def parse_args(args: str, usage: str) -> ModelArgs:
    """Read ``[--once | --global] [REF]`` in any order.

    :param args: the text after ``/model``.
    :param usage: the usage line, quoted in errors.
    :returns: the reference (or None) and the scope.
    :raises CommandUsageError: an unknown flag, both flags, two references, or a flag without one.
    """
    ref: str | None = None
    flag: str | None = None
    for token in args.split():
        if token.startswith("-"):
            if token not in FLAGS:
                raise CommandUsageError(usage, f"unknown option {token}; usage: {usage}")
            if flag is not None and flag != token:
                raise CommandUsageError(usage, f"--once and --global cannot be combined; usage: {usage}")
            flag = token
        elif ref is None:
            ref = token
        else:
            raise CommandUsageError(usage, f"give one model reference, not several; usage: {usage}")
    if flag is not None and ref is None:
        raise CommandUsageError(usage, f"{flag} needs a model reference; usage: {usage}")
    return ModelArgs(ref, FLAGS[flag] if flag else "session")


def _session_of(ctx: CommandContext, usage: str) -> Session:
    if ctx.session is None:
        raise CommandUsageError(usage, "/model needs a session")
    return ctx.session


async def run(ctx: CommandContext, usage: str) -> CommandResult:
    """Run ``/model`` with the context's arguments.

    :param ctx: the dispatch context.
    :param usage: the command's usage line.
    :returns: the choices (no reference) or a confirmation of the switch; ``data`` holds the
        same facts for transports.
    """
    session = _session_of(ctx, usage)
    wanted = parse_args(ctx.args, usage)
    if wanted.ref is None:
        return await show(ctx, session)
    return await switch(ctx, session, wanted.ref, wanted.scope)


async def show(ctx: CommandContext, session: Session) -> CommandResult:
    """Describe the current model and every provider's models.

    :param ctx: the dispatch context.
    :param session: the session whose model is shown.
    :returns: readable text plus ``data`` {model, provider, source, catalog}.
    """
    info = session.info()
    catalog = await ctx.kernel.model_catalog(network=False, session=session)
    text = render_choices(info.model, info.model_source, catalog)
    data = {"model": info.model, "provider": info.provider, "source": info.model_source, "catalog": catalog}
    return CommandResult(kind="exec", output=text, data=data)


async def switch(ctx: CommandContext, session: Session, ref: str, scope: Scope) -> CommandResult:
    """Switch the model; the core validates the reference before anything changes.

    :param ctx: the dispatch context.
    :param session: the session to switch.
    :param ref: a ``provider:model`` reference, a bare model name, a family name such as
        ``claude-sonnet-4`` (the newest matching id) or an alias.
    :param scope: ``session``, ``once`` or ``global``.
    :returns: the confirmation text plus ``data`` describing the switch.
    """
    done = await session.switch_model(ref, scope=scope)
    # A family name or an alias: say what it stood for ("resolved from claude-sonnet-4").
    resolved_from = ref if ref not in (done.ref, done.model) else None
    how = f"resolved from {resolved_from}; " if resolved_from else ""
    lines = [f"Model switched to {done.ref} ({how}{SCOPE_WORDS[scope]})"]
    note = await _unlisted_note(ctx, done.provider, done.model)
    if note:
        lines.append(note)
    data: dict[str, Any] = {
        "model": done.ref,
        "provider": done.provider,
        "model_id": done.model,
        "scope": done.scope,
        "previous": done.previous,
        "requested": ref,
        "resolved_from": resolved_from,
        "marker_row_id": done.marker_row_id,
    }
    return CommandResult(kind="exec", output="\n".join(lines), data=data)


async def _unlisted_note(ctx: CommandContext, provider: str, model: str) -> str | None:
    """Warn when a provider with an open model list accepted a name it does not list."""
    directory = ctx.kernel.providers
    if not directory.has(provider):
        return None
    listed = [m.id for m in await directory.offline_models(provider)]
    if listed and model not in listed:
        return f"Note: {model!r} is not in {provider}'s model list; it is sent to the provider as given."
    return None
