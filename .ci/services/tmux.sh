#!/usr/bin/env bash
# tmux, installed when missing, for the tests that read a real terminal's screen: upstream's Ink TUI
# (tests/tui/ink/, bundle fetched into .ci/ink-tui) and hermes chat (tests/chat/test_chat_terminal.py),
# each in a pane of a private tmux server.
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q tmux
