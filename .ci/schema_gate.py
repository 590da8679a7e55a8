"""The schema gate: export the wire schemas of the merge base and of this checkout, then diff them.

Fails (exit 1) on a breaking change unless ``SCHEMA_VERSION``'s major part was raised
(CONTRIBUTING.md, "The schema gate"). The merge base is ``git merge-base HEAD <ref>`` with
``<ref>`` from ``$HERMES_SCHEMA_BASE`` (default ``origin/main``, else ``main``). The base's code is
checked out into a temporary worktree and exported with this checkout's interpreter, its source
folders first on ``sys.path``; a base without ``hermes schema export`` has nothing to compare.

Usage: ``.venv/bin/python .ci/schema_gate.py`` from the repository root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Runs `hermes` from the source folders given first on argv, whatever the installed copy is.
RUNNER = (
    "import sys\n"
    "src = sys.argv[1]\n"
    "sys.path[:0] = [src, src + '/plugins']\n"
    "sys.argv = ['hermes', *sys.argv[2:]]\n"
    "from hermes_cli.main import main\n"
    "raise SystemExit(main())\n"
)


def git(*args: str) -> str:
    """Run git in the repository; return its stdout (raises on failure)."""
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def base_commit() -> str | None:
    """Return the merge base with the configured ref, or None when no ref exists."""
    refs = (
        [os.environ["HERMES_SCHEMA_BASE"]]
        if os.environ.get("HERMES_SCHEMA_BASE")
        else ["origin/main", "main"]
    )
    for ref in refs:
        try:
            return git("merge-base", "HEAD", ref)
        except subprocess.CalledProcessError:
            continue
    return None


def hermes(source: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``hermes ARGS`` from the code in ``source`` with a private HERMES_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.pop("PYTHONPATH", None)
    env["HERMES_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(source), *args],
        cwd=str(home),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def main() -> int:
    """Run the gate; return the exit status."""
    base = base_commit()
    if base is None:
        print("schema gate: no base ref (set HERMES_SCHEMA_BASE); nothing to compare")
        return 0
    with tempfile.TemporaryDirectory(prefix="hermes-schema-gate-") as tmp:
        work = Path(tmp)
        home = work / "home"
        home.mkdir()
        tree = work / "base"
        git("worktree", "add", "--detach", str(tree), base)
        try:
            old = hermes(tree, home, "schema", "export", "--out", str(work / "old"))
        finally:
            git("worktree", "remove", "--force", str(tree))
        if old.returncode != 0:
            if "such command 'schema'" in old.stderr.lower():
                print(f"schema gate: the base {base[:12]} has no `hermes schema export`; nothing to compare")
                return 0
            print(f"schema gate: exporting the base {base[:12]} failed:\n{old.stderr}", file=sys.stderr)
            return 1
        new = hermes(ROOT, home, "schema", "export", "--out", str(work / "new"))
        if new.returncode != 0:
            print(f"schema gate: exporting this checkout failed:\n{new.stderr}", file=sys.stderr)
            return 1
        diff = hermes(ROOT, home, "schema", "diff", "--gate", "--quiet", str(work / "old"), str(work / "new"))
        print(f"schema gate: base {base[:12]}")
        sys.stdout.write(diff.stdout)
        sys.stderr.write(diff.stderr)
        return diff.returncode


if __name__ == "__main__":
    raise SystemExit(main())
