#!/bin/sh
# The container's health check (Dockerfile HEALTHCHECK): asks the service
# on its own port, over TLS when it serves TLS itself. Exits 0 when it
# answers 200. Reads the same OUTCOMES_LISTEN and OUTCOMES_TLS_CERT the
# service does; a listen address or TLS set only in a config file is not
# seen here, so set those two by environment in a container.
#
# The path: /health answers 200 while the database and the token table are
# usable (docs/operations.md#health-and-version). Where the service has
# /readyz (database, migrations, plugins, scheduler), probe that instead:
# OUTCOMES_HEALTHCHECK_PATH=/readyz.
set -eu
listen="${OUTCOMES_LISTEN:-127.0.0.1:8080}"
port="${listen##*:}"
scheme=http
if [ -n "${OUTCOMES_TLS_CERT:-}" ]; then
    scheme=https
fi
# --insecure: the certificate names the public host name, not 127.0.0.1,
# and nothing secret is sent.
exec curl --fail --silent --show-error --max-time 5 --insecure --output /dev/null \
    "$scheme://127.0.0.1:$port${OUTCOMES_HEALTHCHECK_PATH:-/health}"
