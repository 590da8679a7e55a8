"""Which params model and result type each typed TUI gateway method has.

The handlers parse with these models and annotate their answers with these types; this table
lets ``hermes schema export`` (:mod:`hermes_tui_gateway.schema_doc`) name them per method. A
method missing here is exported with ``x-typed: false`` (any object in, any object out); the
"feature off" methods bring their own (:data:`hermes_tui_gateway.feature_off.OFF`).
"""

from __future__ import annotations

from typing import Any

from hermes_tui_gateway import wire_params as p
from hermes_tui_gateway import wire_params_ops as po
from hermes_tui_gateway import wire_results as r
from hermes_tui_gateway import wire_results_cmds as rc
from hermes_tui_gateway import wire_results_ops as ro
from hermes_tui_gateway.feature_off import OFF
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
    "config.get": (po.ConfigGetParams, ro.ConfigValue),
    "config.set": (po.ConfigSetParams, ro.ConfigValue),
    "setup.status": (p.NoParams, ro.SetupStatus),
    "model.options": (po.ModelOptionsParams, ro.ModelOptions),
    "complete.slash": (po.CompleteSlashParams, ro.CompletionResult),
    "complete.path": (po.CompletePathParams, ro.CompletionResult),
    "session.active_list": (po.ActiveListParams, ro.ActiveListResult),
    "session.usage": (p.SessionParams, UsageObj),
    "session.status": (p.SessionParams, ro.StatusResult),
    "session.events.since": (po.EventsSinceParams, ro.EventsSinceResult),
    "terminal.resize": (po.ResizeParams, ro.ResizeResult),
    "gateway.ping": (p.NoParams, ro.PingResult),
    "session.most_recent": (p.NoParams, ro.MostRecentResult),
    "session.undo": (p.SessionParams, ro.UndoResult),
    "session.save": (p.SessionParams, ro.SaveResult),
    "session.delete": (po.DeleteParams, ro.NeverAnswered),
    "session.compress": (po.CompressParams, ro.CompressResult),
    "delegation.status": (p.SessionParams, ro.DelegationStatus),
    "delegation.pause": (po.DelegationPauseParams, ro.DelegationPauseResult),
    "subagent.list": (po.SubagentListParams, ro.SubagentListResult),
    "subagent.interrupt": (po.SubagentParams, ro.SubagentInterruptResult),
    "subagent.steer": (po.SubagentSteerParams, ro.SubagentSteerResult),
    "subagent.tail": (po.SubagentTailParams, ro.SubagentTailResult),
    "spawn_tree.save": (po.SpawnTreeSaveParams, ro.SpawnTreeSaved),
    "spawn_tree.list": (po.SpawnTreeListParams, ro.SpawnTreeList),
    "spawn_tree.load": (po.SpawnTreeLoadParams, ro.SpawnTree),
    "commands.catalog": (p.NoParams, rc.CommandCatalog),
    "command.resolve": (po.CommandResolveParams, rc.CommandResolved),
    "command.dispatch": (po.CommandDispatchParams, rc.CommandDirective),
    "slash.exec": (po.SlashExecParams, rc.SlashExecResult),
    "cli.exec": (po.CliExecParams, rc.CliExecResult),
    "reload.mcp": (p.NoParams, rc.ReloadMcpResult),
    "reload.env": (p.NoParams, rc.ReloadEnvResult),
    "process.stop": (p.SessionParams, rc.ProcessStopResult),
    "plugins.manage": (po.PluginsManageParams, rc.PluginsList),
    "tools.configure": (po.ToolsConfigureParams, rc.ToolsConfigured),
    "input.detect_drop": (po.DetectDropParams, rc.DropDetected),
    "shell.exec": (po.ShellExecParams, rc.ShellExecResult),
    "paste.collapse": (po.PasteCollapseParams, rc.PasteCollapsed),
    "image.attach": (po.ImageAttachParams, rc.Attached),
    "clipboard.paste": (p.SessionParams, rc.Attached),
}
#: the methods answered as "off" (upstream-only features), typed by their own table
METHOD_TYPES.update({name: (off.params, off.result) for name, off in OFF.items()})
