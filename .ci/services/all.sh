# Start the system services the tests use and export where they are; sourced by .ci/run.
#   services_start   install when missing, start on loopback, export HERMES_TEST_* variables
#   services_stop    stop them and remove their data (call from an EXIT trap)
# A service that cannot start is reported and left unset: with CI=true the tests that need it
# then fail (tests/services.py), so a broken machine is never a silent skip.

_services_here=$(dirname "${BASH_SOURCE[0]}")
. "$_services_here/common.sh"
. "$_services_here/postgres.sh"
. "$_services_here/redis.sh"
. "$_services_here/nginx.sh"

services_start() {
  pg_start || echo "services: PostgreSQL did not start" >&2
  redis_start || echo "services: Redis did not start" >&2
  nginx_start || echo "services: nginx is not available" >&2
}

services_stop() {
  nginx_stop
  redis_stop
  pg_stop
}
