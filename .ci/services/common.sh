# Helpers shared by the service scripts; sourced, never run.

# Install Debian packages when a command is missing. Package scripts are kept from starting
# the system-wide service on its default port (we start our own on a free loopback port).
ci_apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "services: cannot install $* (not root); install it and run again" >&2
    return 1
  fi
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
  fi
  local rc=0
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "$@" >/dev/null 2>&1 || {
    apt-get -o DPkg::Lock::Timeout=300 update -q >/dev/null 2>&1
    apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "$@" >/dev/null || rc=$?
  }
  [ "$made_policy" -eq 1 ] && rm -f "$policy"
  return "$rc"
}

# A free TCP port on the loopback interface.
ci_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Wait up to $2 seconds for a TCP port on 127.0.0.1 to accept connections.
ci_wait_port() {
  python3 - "$1" "${2:-30}" <<'PY'
import socket, sys, time
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
