-- Fill-out sessions (SQLite): the hosted pages a respondent fills out
-- questionnaires on. migrations/postgres/0007_fill_out_sessions.sql is the
-- same in PostgreSQL's dialect.

-- Secrets the hosts of one database share, made once by whichever host
-- needs one first (the key that signs fill-out links, unless configured).
CREATE TABLE host_secrets (
    name        TEXT    PRIMARY KEY,
    value       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

-- A session starts with a signed one-time link (POST fill_out_sessions:
-- link_key and nonce set) or with a respondent's completing_url (both
-- NULL). Logging in spends the link, prepares the blank questionnaires and
-- fixes the flow (response_ids), and binds a browser by its cookie, kept
-- only as a hash.
CREATE TABLE fill_out_sessions (
    id                 INTEGER PRIMARY KEY,
    dossier_id         INTEGER NOT NULL REFERENCES dossiers (id),
    respondent_id      INTEGER NOT NULL REFERENCES respondents (id),
    link_key           TEXT    CONSTRAINT fill_out_sessions_link_key UNIQUE,
    nonce              TEXT,
    -- JSON arrays: questionnaires to prepare blank at login; aborted
    -- responses to resume; after login, the responses of the flow in order.
    questionnaire_ids  TEXT    NOT NULL DEFAULT '[]',
    resume_ids         TEXT    NOT NULL DEFAULT '[]',
    response_ids       TEXT    NOT NULL DEFAULT '[]',
    return_to          TEXT,
    progress_url       TEXT,
    stylesheet         TEXT,
    logged_in_at       INTEGER,
    cookie_sha256      TEXT    CONSTRAINT fill_out_sessions_cookie UNIQUE,
    last_seen_at       INTEGER,
    ended_at           INTEGER,
    created_at         INTEGER NOT NULL
);
CREATE INDEX fill_out_sessions_dossier ON fill_out_sessions (dossier_id, id);
