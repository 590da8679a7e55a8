# nginx for the multi-instance tests; sourced by .ci/services/all.sh.
# Only installed here: each test writes its own configuration (upstreams on ports it picks)
# and starts and stops its own nginx. HERMES_TEST_NGINX names the binary.

nginx_start() {
  local bin
  bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null)
  if [ -z "$bin" ]; then
    echo "services: installing nginx" >&2
    ci_apt_install nginx-light || ci_apt_install nginx || return 1
    bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null)
  fi
  [ -n "$bin" ] || { echo "services: nginx installed but not found" >&2; return 1; }
  export HERMES_TEST_NGINX="$bin"
  echo "services: nginx $("$bin" -v 2>&1 | sed 's/.*nginx\///')" >&2
}

nginx_stop() {
  unset HERMES_TEST_NGINX
}
