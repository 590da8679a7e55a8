#!/usr/bin/env bash
# tmux for the real-terminal tests of hermes chat (tests/chat/test_chat_terminal.py), installed
# when missing: each test runs the chat in a pane of a private tmux server and reads the screen.
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q tmux
