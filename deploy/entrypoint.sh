#!/bin/sh
# The container's entrypoint (Dockerfile): brings the database schema up to
# date, then serves. Settings come from OUTCOMES_* environment variables
# (or a file named by OUTCOMES_CONFIG); arguments go to `outcomes serve`.
# An argument that is not a flag names another command instead, e.g.
# `docker run --rm -v outcomes-data:/var/lib/outcomes IMAGE token list`.
set -eu
bin="$(dirname "$0")/outcomes"
case "${1:-}" in
    "" | -*)
        # `serve` migrates too; migrating first makes a schema problem stop
        # the container with the migration's own message, before the
        # listener opens.
        "$bin" migrate
        exec "$bin" serve "$@"
        ;;
    *)
        exec "$bin" "$@"
        ;;
esac
