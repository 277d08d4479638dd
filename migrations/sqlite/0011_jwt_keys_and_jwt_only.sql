-- JWT keys pinned to their algorithm (RFC 8725 section 3.1), and tokens
-- without a Basic secret. migrations/postgres/0011_jwt_keys_and_jwt_only.sql
-- is the same change in PostgreSQL's dialect.

-- The algorithms a key verifies, comma-separated: `RS256` or `RS512` for
-- every key registered from now on (`outcomes token add-key --algorithm`).
-- Keys registered before accepted both, and keep doing so until an
-- operator pins them (docs/operations.md#jwt-keys-and-tokens): no EPD stops
-- working at the upgrade.
ALTER TABLE api_token_keys ADD COLUMN algorithms TEXT NOT NULL DEFAULT 'RS256,RS512';

-- 1: the token authenticates with JWTs only; HTTP Basic is refused (its
-- stored secret hash belongs to a secret that was never shown).
ALTER TABLE api_tokens ADD COLUMN jwt_only INTEGER NOT NULL DEFAULT 0
    CONSTRAINT api_tokens_jwt_only CHECK (jwt_only IN (0, 1));
