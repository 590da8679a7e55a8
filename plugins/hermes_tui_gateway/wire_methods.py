"""Which params model and result type each typed TUI gateway method has.

The handlers parse with these models and annotate their answers with these types; this table
lets ``hermes schema export`` (:mod:`hermes_tui_gateway.schema_doc`) name them per method. A
method missing here is exported with ``x-typed: false`` (any object in, any object out).
"""

from __future__ import annotations

from typing import Any

from hermes_tui_gateway import wire_params as p
from hermes_tui_gateway import wire_results as r
from hermes_tui_gateway.wire import UsageObj

#: method → (params model, result type)
METHOD_TYPES: dict[str, tuple[type[p.ParamsModel], Any]] = {
    "session.create": (p.SessionCreateParams, r.Snapshot),
    "session.resume": (p.SessionResumeParams, r.ResumeResult),
    "session.list": (p.SessionListParams, r.SessionListResult),
    "session.activate": (p.SnapshotParams, r.Snapshot),
    "session.close": (p.SessionParams, r.CloseResult),
    "session.history": (p.SessionHistoryParams, r.HistoryResult),
    "session.branch": (p.SessionBranchParams, r.BranchResult),
    "session.title": (p.SessionTitleParams, r.TitleResult),
    "session.interrupt": (p.SessionParams, r.InterruptResult),
    "session.steer": (p.TextParams, r.SteerResult),
    "prompt.submit": (p.PromptSubmitParams, r.SubmitResult),
    "prompt.background": (p.TextParams, r.BackgroundResult),
    "clarify.respond": (p.ClarifyRespondParams, r.AnswerResult),
    "sudo.respond": (p.SudoRespondParams, r.AnswerResult),
    "secret.respond": (p.SecretRespondParams, r.AnswerResult),
    "approval.respond": (p.ApprovalRespondParams, r.ApprovalResult),
    "config.get": (p.ConfigGetParams, r.ConfigValue),
    "config.set": (p.ConfigSetParams, r.ConfigValue),
    "setup.status": (p.NoParams, r.SetupStatus),
    "model.options": (p.ModelOptionsParams, r.ModelOptions),
    "complete.slash": (p.CompleteSlashParams, r.CompletionResult),
    "complete.path": (p.CompletePathParams, r.CompletionResult),
    "session.active_list": (p.ActiveListParams, r.ActiveListResult),
    "session.usage": (p.SessionParams, UsageObj),
    "session.status": (p.SessionParams, r.StatusResult),
    "session.events.since": (p.EventsSinceParams, r.EventsSinceResult),
    "terminal.resize": (p.ResizeParams, r.ResizeResult),
    "gateway.ping": (p.NoParams, r.PingResult),
    "session.most_recent": (p.NoParams, r.MostRecentResult),
    "session.undo": (p.SessionParams, r.UndoResult),
    "session.save": (p.SessionParams, r.SaveResult),
    "session.delete": (p.DeleteParams, r.NeverAnswered),
    "session.compress": (p.CompressParams, r.CompressResult),
    "delegation.status": (p.SessionParams, r.DelegationStatus),
    "delegation.pause": (p.DelegationPauseParams, r.DelegationPauseResult),
    "subagent.list": (p.SubagentListParams, r.SubagentListResult),
    "subagent.interrupt": (p.SubagentParams, r.SubagentInterruptResult),
    "subagent.steer": (p.SubagentSteerParams, r.SubagentSteerResult),
    "subagent.tail": (p.SubagentTailParams, r.SubagentTailResult),
    "spawn_tree.save": (p.SpawnTreeSaveParams, r.SpawnTreeSaved),
    "spawn_tree.list": (p.SpawnTreeListParams, r.SpawnTreeList),
    "spawn_tree.load": (p.SpawnTreeLoadParams, r.SpawnTree),
}
