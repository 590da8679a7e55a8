# Redis for the run-bus tests; sourced by .ci/services/all.sh.
# Starts a server without persistence on a free loopback port and exports HERMES_TEST_REDIS_URL.

REDIS_DIR=""

redis_start() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "services: installing Redis" >&2
    ci_apt_install redis-server || return 1
  fi
  REDIS_DIR=$(mktemp -d /tmp/hermes-ci-redis.XXXXXX)
  local port
  port=$(ci_free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$REDIS_DIR" --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >/dev/null || return 1
  ci_wait_port "$port" 30 || { cat "$REDIS_DIR/redis.log" >&2; return 1; }
  export HERMES_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
  echo "services: Redis $(redis-server --version | awk '{print $3}' | tr -d 'v=') on 127.0.0.1:$port" >&2
}

redis_stop() {
  [ -n "$REDIS_DIR" ] || return 0
  if [ -f "$REDIS_DIR/redis.pid" ]; then
    kill "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null
  fi
  rm -rf "$REDIS_DIR"
  REDIS_DIR=""
  unset HERMES_TEST_REDIS_URL
}
