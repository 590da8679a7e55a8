"""The committed clients in ``clients/`` are what ``python -m tools.gen_clients`` makes from
today's export, and the TypeScript types compile with ``tsc --strict`` (docs/integrating.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.clients.conftest import REPO

GENERATED = [
    "python/hermes_client/tui_models.py",
    "python/hermes_client/api_models.py",
    "python/hermes_client/tui_methods.py",
    "python/hermes_client/api_operations.py",
    "python/hermes_client/stamp.py",
    "ts/tui.d.ts",
    "ts/api.d.ts",
]

#: A host's code against the generated types: wrong field names or types fail to compile.
HOST_TS = """
import type { TuiMethods, TuiEvents, TuiEvent, Snapshot, ApprovalRequestPayload } from "./tui";
import type { components, ApiSseEvents } from "./api";

type Params<M extends keyof TuiMethods> = TuiMethods[M]["params"];
type Result<M extends keyof TuiMethods> = TuiMethods[M]["result"];

export function submit(sessionId: string, text: string): Params<"prompt.submit"> {
  return { session_id: sessionId, text };
}
export function sessionOf(created: Result<"session.create">): string {
  const snapshot: Snapshot = created;
  return snapshot.session_id + snapshot.messages.map((m) => m.role).join(",");
}
export function answer(event: TuiEvent<"approval.request">): Params<"approval.respond"> {
  const asked: ApprovalRequestPayload = event.payload;
  return { session_id: event.session_id, request_id: asked.request_id, choice: asked.choices[0] };
}
export function deltaText(payload: TuiEvents["message.delta"]): string {
  return payload.text;
}
export function chunkText(chunk: ApiSseEvents["createChatCompletion"]["chat.completion.chunk"]): string {
  return chunk.choices.map((c) => c.delta.content ?? "").join("");
}
export function runOf(accepted: components["schemas"]["RunAccepted"]): string {
  return accepted.run_id;
}
"""


def test_committed_clients_match_a_fresh_generation(generated: Path) -> None:
    stale = [
        name
        for name in GENERATED
        if (REPO / "clients" / name).read_bytes() != (generated / name).read_bytes()
    ]
    assert not stale, (
        f"clients/ is out of date with the schema export: {stale}; run `python -m tools.gen_clients`"
    )


def test_typescript_types_compile_with_a_host(generated: Path, node_tools: Path, tmp_path: Path) -> None:
    for name in ("tui.d.ts", "api.d.ts"):
        (tmp_path / name).write_bytes((generated / "ts" / name).read_bytes())
    (tmp_path / "host.ts").write_text(HOST_TS)
    done = subprocess.run(
        [
            str(node_tools / "tsc"),
            "--strict",
            "--noEmit",
            "--skipLibCheck",
            "false",
            "--target",
            "es2022",
            "--moduleResolution",
            "bundler",
            "--module",
            "esnext",
            "host.ts",
            "tui.d.ts",
            "api.d.ts",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_host_with_a_wrong_field_does_not_compile(
    generated: Path, node_tools: Path, tmp_path: Path
) -> None:
    """The types say something: a misspelt field is a compile error."""
    (tmp_path / "tui.d.ts").write_bytes((generated / "ts" / "tui.d.ts").read_bytes())
    (tmp_path / "host.ts").write_text(
        'import type { TuiEvents } from "./tui";\n'
        'export const f = (p: TuiEvents["message.delta"]): string => p.txt;\n'
    )
    done = subprocess.run(
        [
            str(node_tools / "tsc"),
            "--strict",
            "--noEmit",
            "--moduleResolution",
            "bundler",
            "--module",
            "esnext",
            "host.ts",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "txt" in done.stdout
