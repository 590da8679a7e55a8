"""The approval policy: whether a tool call runs, asks or is denied (docs/reference/core.md#approvals).

Pure, synchronous and stdlib-only. The agent loop builds :class:`CallFacts` for every tool
call, collects the ``hermes_before_tool_call`` results and calls :func:`assess`; the returned
:class:`Assessment` carries the decision and everything the approval question needs (keys,
choices, reasons, description). The pieces live in ``approval_*`` modules and are re-exported
here, which is the public module.

Choices made where the spec leaves room:

- ``exec:<first word>`` keys name the first word of *every* simple command in a compound
  (``ls && curl x`` → ``exec:ls``, ``exec:curl``), so remembering one never covers another.
- The rule-2 escalation after a denial asks even when a policy plugin said ``allow``.
- A plugin decision outside ``allow``/``ask``/``deny`` counts as ``ask`` (fail closed); kinds
  outside the docs/reference/core.md#tools list count as ``other``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from hermes_core.approvals.allowlist import ALLOWLIST_VERSION, Allowlist, open_allowlist
from hermes_core.approvals.denials import DenialMemory
from hermes_core.approvals.guards import GUARD_PATTERNS, GuardPattern, command_names, match_guards
from hermes_core.approvals.paths import is_inside, is_sensitive_path, resolve_path
from hermes_core.errors import InvalidValue
from hermes_core.records import PolicyDecision

__all__ = [
    "ALLOWLIST_VERSION",
    "DENIED_EARLIER",
    "ESCALATED_KINDS",
    "GUARD_PATTERNS",
    "PROFILES",
    "Allowlist",
    "Assessment",
    "CallFacts",
    "DenialMemory",
    "GuardPattern",
    "assess",
    "combine",
    "command_names",
    "is_inside",
    "is_sensitive_path",
    "match_guards",
    "open_allowlist",
    "profile_asks",
]

Decision = Literal["allow", "ask", "deny"]

PROFILES: tuple[str, ...] = ("ask_everything", "default", "accept_edits", "off")
READ_KINDS = frozenset({"read", "search", "think"})
EDIT_KINDS = frozenset({"edit", "delete", "move"})
# docs/reference/core.md#denials-hold-for-the-turn rule 2: after a denial these kinds always ask (except under
# ``off``).
ESCALATED_KINDS = frozenset({"edit", "delete", "move", "execute", "fetch"})
DENIED_EARLIER = "Denied earlier in this turn"

_RANK: dict[str | None, int] = {None: 0, "allow": 1, "ask": 2, "deny": 3}
_ACTIVITY = {"edit": "changing files", "delete": "changing files", "move": "changing files"}
_ACTIVITY.update(execute="running commands", fetch="fetching from the network")
_MAX_COMMAND_CHARS = 200


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the policy needs to know about one tool call.

    :param name: the tool's name.
    :param kind: the tool's kind (docs/reference/core.md#tools).
    :param paths: absolute, resolved targets of a file tool (relative ones resolve against
        ``workspace``).
    :param command: the shell command of an ``execute`` tool.
    :param workspace: the session's workspace (docs/reference/core.md#workspace).
    :param policy_key: an extra approval key the caller wants asked about and remembered; it
        replaces the ``tool:<name>`` fallback.
    """

    name: str
    kind: str
    paths: tuple[Path, ...]
    command: str | None
    workspace: Path
    policy_key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Assessment:
    """The policy's verdict on one call, with what an approval question shows.

    :param decision: ``allow`` (run), ``ask`` or ``deny``.
    :param keys: the approval keys (docs/reference/core.md#approval-keys-and-memory), in order, without
        repeats.
    :param sources: ``(name, decision, reason)`` per deciding plugin, then ``core``.
    :param reasons: why it asks or is denied (plugin reasons prefixed with the plugin name).
    :param allow_session: whether ``session`` may be offered (no sensitive target).
    :param persistable: whether ``always`` may be offered (no sensitive target).
    :param description: one line for the approval prompt.
    :param choices: ``once``, ``session`` (if allowed), ``always`` (if persistable), ``deny``.
    :param denied_earlier: docs/reference/core.md#denials-hold-for-the-turn rule 1 refused it; the tool error
        is :data:`DENIED_EARLIER`.
    :param guards: ids of the guarded patterns the command matches.
    :param sensitive_paths: targets that are sensitive.
    :param outside_paths: targets outside the workspace.
    """

    decision: Decision
    keys: tuple[str, ...]
    sources: tuple[tuple[str, str, str], ...]
    reasons: tuple[str, ...]
    allow_session: bool
    persistable: bool
    description: str
    choices: tuple[str, ...]
    denied_earlier: bool = False
    guards: tuple[str, ...] = ()
    sensitive_paths: tuple[Path, ...] = ()
    outside_paths: tuple[Path, ...] = ()


def _vote(decision: PolicyDecision) -> Decision:
    value = decision.decision
    return value if value in ("allow", "ask", "deny") else "ask"


def combine(decisions: Sequence[tuple[str, PolicyDecision | None]]) -> Decision | None:
    """Combine plugin decisions as deny > ask > allow > None.

    :param decisions: ``(plugin name, decision or None)`` pairs.
    :returns: the strongest decision, or ``None`` when no plugin decided.
    """
    best: Decision | None = None
    for _name, decision in decisions:
        if decision is not None and _RANK[_vote(decision)] > _RANK[best]:
            best = _vote(decision)
    return best


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise InvalidValue("profile", PROFILES)


def profile_asks(profile: str, kind: str) -> bool:
    """Tell whether a profile asks before an in-workspace call of this kind
    (docs/reference/core.md#approval-profiles table).

    :param profile: one of :data:`PROFILES`.
    :param kind: the tool's kind; unknown kinds count as ``other``.
    :raises InvalidValue: for an unknown profile.
    """
    _check_profile(profile)
    if kind in READ_KINDS:
        return False
    if kind in EDIT_KINDS:
        return profile in ("ask_everything", "default")
    return profile == "ask_everything"


def _dedupe(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _plugin_text(name: str, decision: PolicyDecision, fallback: str) -> str:
    return f"{name}: {decision.reason}" if decision.reason else f"{name} {fallback}"


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(
    facts: CallFacts,
    targets: Sequence[Path],
    workspace: Path,
    guards: Sequence[str],
    sensitive: Sequence[Path],
    outside: Sequence[Path],
    redact: Callable[[str], str],
) -> str:
    if facts.command is not None:
        text = f"Run `{_one_line(redact(facts.command), _MAX_COMMAND_CHARS)}`"
        return f"{text} (matches {', '.join(guards)})" if guards else text
    if not targets:
        return f"Call {facts.name}"
    shown = []
    for path in targets:
        notes = ["outside the workspace"] if path in outside else []
        notes += ["sensitive path"] if path in sensitive else []
        label = str(path.relative_to(workspace)) if path not in outside and path != workspace else str(path)
        shown.append(f"{label} ({', '.join(notes)})" if notes else label)
    return _one_line(f"Use {facts.name} on {', '.join(shown)}", _MAX_COMMAND_CHARS + 100)


def assess(
    facts: CallFacts,
    *,
    profile: str,
    decisions: Sequence[tuple[str, PolicyDecision | None]],
    remembered: Callable[[str], bool],
    denials: DenialMemory,
    redact: Callable[[str], str] | None = None,
) -> Assessment:
    """Decide whether a tool call runs, asks or is denied (docs/reference/core.md#combining-decisions
    procedure).

    :param facts: the call.
    :param profile: the session's approval profile, one of :data:`PROFILES`.
    :param decisions: every ``hermes_before_tool_call`` result, attributed to its plugin.
    :param remembered: whether a key is allowed by session memory or the allowlist.
    :param denials: the turn's denials (docs/reference/core.md#denials-hold-for-the-turn).
    :param redact: masks secrets in the description (default: the core's ``redact``).
    :returns: the assessment; the caller records a denial in ``denials`` itself.
    :raises InvalidValue: for an unknown profile.
    """
    _check_profile(profile)
    if redact is None:
        from hermes_core.redaction import redact as core_redact

        redact = core_redact
    workspace = resolve_path(facts.workspace) or facts.workspace
    targets = [resolve_path(p, workspace) or workspace / p for p in facts.paths]
    raw = [p if p.is_absolute() else workspace / p for p in facts.paths]
    sensitive = [t for t, r in zip(targets, raw, strict=True) if is_sensitive_path(r) or is_sensitive_path(t)]
    outside = [t for t in targets if not is_inside(t, workspace)]
    guards = match_guards(facts.command) if facts.command is not None else []
    votes = [(name, d, _vote(d)) for name, d in decisions if d is not None]
    kind = facts.kind
    profile_ask = profile_asks(profile, kind)
    escalated = denials.any and kind in ESCALATED_KINDS and profile != "off"

    keys = [f"guard:{g}" for g in guards] + [f"{facts.name}:{t}" for t in targets]
    exec_keys = [f"exec:{word}" for word in command_names(facts.command or "")]
    if profile_ask or escalated:
        keys += exec_keys
    keys += [d.key for _name, d, vote in votes if d.key and vote in ("ask", "deny")]
    if facts.policy_key:
        keys.append(facts.policy_key)
    if not keys:
        keys = exec_keys or [f"tool:{facts.name}"]
    approval_keys = _dedupe(keys)
    safe = not sensitive
    base = Assessment(
        decision="ask",
        keys=approval_keys,
        sources=(),
        reasons=(),
        allow_session=safe,
        persistable=safe,
        description=_describe(facts, targets, workspace, guards, sensitive, outside, redact),
        choices=("once", "session", "always", "deny") if safe else ("once", "deny"),
        guards=tuple(guards),
        sensitive_paths=tuple(sensitive),
        outside_paths=tuple(outside),
    )
    plugin_sources = tuple((name, vote, d.reason) for name, d, vote in votes)

    def verdict(decision: Decision, reasons: Sequence[str], why: str, earlier: bool = False) -> Assessment:
        sources = (*plugin_sources, ("core", decision, why))
        return replace(
            base, decision=decision, sources=sources, reasons=_dedupe(reasons), denied_earlier=earlier
        )

    # 1. A plugin's deny, or docs/reference/core.md#denials-hold-for-the-turn rule 1.
    deny_reasons = [_plugin_text(n, d, "denied this call") for n, d, v in votes if v == "deny"]
    earlier = denials.blocks(facts, approval_keys)
    if earlier:
        deny_reasons.append(DENIED_EARLIER)
    if deny_reasons:
        return verdict("deny", deny_reasons, "; ".join(deny_reasons), earlier)
    # 2. Nothing ever asks under off.
    if profile == "off":
        return verdict("allow", (), "the off profile runs every call")
    # 3. Fixed asks (docs/reference/core.md#fixed-asks); 4. the profile; then
    # docs/reference/core.md#denials-hold-for-the-turn rule 2.
    fixed = [f"The command matches the guarded pattern `{g}`" for g in guards]
    fixed += [f"{p} is a sensitive path" for p in sensitive]
    fixed += [f"{p} is outside the workspace" for p in outside]
    fixed += [_plugin_text(n, d, "asks for approval") for n, d, v in votes if v == "ask"]
    plugin_allowed = any(v == "allow" for _n, _d, v in votes)
    all_remembered = (bool(fixed) or profile_ask) and all(remembered(k) for k in approval_keys)
    reasons: list[str] = []
    if fixed and not (all_remembered and safe):
        reasons += fixed
    if profile_ask and not (plugin_allowed or all_remembered):
        reasons.append(f"The `{profile}` profile asks before {_ACTIVITY.get(kind, 'calling tools')}")
    if escalated:
        reasons.append("A call was denied earlier in this turn, so every change asks until it ends")
    if reasons:
        return verdict("ask", reasons, "; ".join(reasons))
    if all_remembered:
        why = "every approval key is remembered"
    elif plugin_allowed and profile_ask:
        why = "allowed by a policy plugin"
    else:
        why = f"the {profile} profile runs {kind} calls"
    return verdict("allow", (), why)
