# PostgreSQL for the storage tests; sourced by .ci/services/all.sh.
# Starts a throw-away cluster on a free loopback port (as the postgres user when run as root:
# the server refuses to run as root), with password authentication, and exports
# HERMES_TEST_POSTGRES_DSN. pg_stop removes it again.

PG_DIR=""
PG_BINDIR=""
PG_RUN=()

_pg_bindir() {
  # pg_ctl is not on PATH in Debian's packages; take the newest installed version.
  if command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/pg_ctl" ] && echo "$dir"
}

pg_start() {
  local bindir
  bindir=$(_pg_bindir) || bindir=""
  if [ -z "$bindir" ]; then
    echo "services: installing PostgreSQL" >&2
    ci_apt_install postgresql || return 1
    bindir=$(_pg_bindir) || { echo "services: PostgreSQL installed but pg_ctl not found" >&2; return 1; }
  fi
  PG_DIR=$(mktemp -d /tmp/hermes-ci-pg.XXXXXX)
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    chown postgres "$PG_DIR"
    PG_RUN=(runuser -u postgres --)
  else
    PG_RUN=()
  fi
  local port password
  port=$(ci_free_port)
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  printf '%s\n' "$password" >"$PG_DIR/pw" && chmod 600 "$PG_DIR/pw"
  [ "$(id -u)" -eq 0 ] && chown postgres "$PG_DIR/pw"
  "${PG_RUN[@]}" "$bindir/initdb" -D "$PG_DIR/data" -U hermes --pwfile="$PG_DIR/pw" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --no-instructions >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  rm -f "$PG_DIR/pw"
  "${PG_RUN[@]}" "$bindir/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR -c max_connections=200" \
    start >/dev/null || { cat "$PG_DIR/server.log" >&2; return 1; }
  PGPASSWORD="$password" "$bindir/psql" -q -h 127.0.0.1 -p "$port" -U hermes -d postgres \
    -c "CREATE DATABASE hermes" >/dev/null || return 1
  PG_BINDIR=$bindir
  export HERMES_TEST_POSTGRES_DSN="postgresql://hermes:$password@127.0.0.1:$port/hermes"
  echo "services: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
}

pg_stop() {
  [ -n "$PG_DIR" ] || return 0
  if [ -f "$PG_DIR/data/postmaster.pid" ]; then
    "${PG_RUN[@]}" "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1
  fi
  rm -rf "$PG_DIR"
  PG_DIR=""
  unset HERMES_TEST_POSTGRES_DSN
}
