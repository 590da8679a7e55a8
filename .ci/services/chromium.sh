#!/usr/bin/env bash
# Debian's Chromium for the run console's browser tests (tests/api/console/), installed when
# missing. Playwright drives this system browser; nothing is downloaded at test time.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q chromium
