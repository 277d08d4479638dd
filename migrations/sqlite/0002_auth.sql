-- API tokens, their JWT public keys, and the access log (NEN 7513).
-- migrations/postgres/0002_auth.sql is the same schema in PostgreSQL's dialect.

CREATE TABLE api_tokens (
    id               INTEGER PRIMARY KEY,
    consumer_key     TEXT    NOT NULL CONSTRAINT api_tokens_consumer_key_key UNIQUE,
    -- SHA-256 (hex) of the consumer secret; the secret itself is never kept.
    secret_sha256    TEXT    NOT NULL,
    rights           TEXT    NOT NULL,
    ip_allow         TEXT    NOT NULL DEFAULT '',
    allowed_origins  TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    -- Revoked tokens stay, with their history in the access log.
    revoked_at       INTEGER
);

CREATE TABLE api_token_keys (
    id              INTEGER PRIMARY KEY,
    token_id        INTEGER NOT NULL REFERENCES api_tokens (id),
    public_key_pem  TEXT    NOT NULL,
    fingerprint     TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    CONSTRAINT api_token_keys_fingerprint UNIQUE (token_id, fingerprint)
);

-- Append-only: the code has no update or delete path, and the triggers
-- refuse one from anywhere else.
CREATE TABLE access_log (
    id            INTEGER PRIMARY KEY,
    at            INTEGER NOT NULL,
    consumer_key  TEXT,
    jwt_issuer    TEXT,
    dossier       TEXT,
    action        TEXT    NOT NULL,
    status        INTEGER NOT NULL,
    client        TEXT    NOT NULL,
    request_id    TEXT
);
CREATE INDEX access_log_dossier ON access_log (dossier, at);

CREATE TRIGGER access_log_no_update BEFORE UPDATE ON access_log
BEGIN SELECT RAISE(ABORT, 'access_log is append-only'); END;
CREATE TRIGGER access_log_no_delete BEFORE DELETE ON access_log
BEGIN SELECT RAISE(ABORT, 'access_log is append-only'); END;
