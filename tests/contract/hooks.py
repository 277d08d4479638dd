"""Schemathesis hooks of the contract test (tests/tests/api/contract.rs).

The import (`POST /api/v1/responses/import`) reads NDJSON, a media type
Schemathesis has no serializer for: a generated string is sent as the
body as it is, anything else as one JSON line.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    return (json.dumps(value) + "\n").encode("utf-8")
