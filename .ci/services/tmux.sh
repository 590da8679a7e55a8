#!/usr/bin/env bash
# tmux for the Ink TUI tests (tests/tui/ink/), installed when missing: they run upstream's Ink TUI
# in a tmux terminal and read its screen. The bundle itself is fetched by the tests (.ci/ink-tui).
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q tmux
