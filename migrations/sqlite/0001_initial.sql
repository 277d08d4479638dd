-- Initial schema (SQLite). migrations/postgres/0001_initial.sql is the same
-- schema in PostgreSQL's dialect; keep the two in step.
-- Times are Unix milliseconds (UTC) in 64-bit integer columns in both
-- dialects, so every query is written once. JSON is kept as TEXT.

CREATE TABLE dossiers (
    id          INTEGER PRIMARY KEY,
    epd_id      TEXT    NOT NULL CONSTRAINT dossiers_epd_id_key UNIQUE,
    created_at  INTEGER NOT NULL
);

CREATE TABLE respondents (
    id               INTEGER PRIMARY KEY,
    dossier_id       INTEGER NOT NULL REFERENCES dossiers (id),
    respondent_type  TEXT    NOT NULL,
    label            TEXT    NOT NULL,
    created_at       INTEGER NOT NULL
);
-- A dossier has one patient and at most one professional respondent.
CREATE UNIQUE INDEX respondents_one_patient_or_profess
    ON respondents (dossier_id, respondent_type)
    WHERE respondent_type IN ('patient', 'profess');
CREATE INDEX respondents_dossier ON respondents (dossier_id, id);

-- Imported from questionnaires/<key>/questionnaire.toml; ids are stable per key.
CREATE TABLE questionnaires (
    id           INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL CONSTRAINT questionnaires_key_key UNIQUE,
    name         TEXT    NOT NULL,
    definition   TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    imported_at  INTEGER NOT NULL
);

-- Imported from protocols/<key>.toml; ids are stable per key.
CREATE TABLE protocols (
    id           INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL CONSTRAINT protocols_key_key UNIQUE,
    name         TEXT    NOT NULL,
    definition   TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    imported_at  INTEGER NOT NULL
);

CREATE TABLE measurements (
    id           INTEGER PRIMARY KEY,
    protocol_id  INTEGER NOT NULL REFERENCES protocols (id),
    key          TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    CONSTRAINT measurements_protocol_key UNIQUE (protocol_id, key)
);

CREATE TABLE protocol_subscriptions (
    id                INTEGER PRIMARY KEY,
    dossier_id        INTEGER NOT NULL REFERENCES dossiers (id),
    protocol_id       INTEGER NOT NULL REFERENCES protocols (id),
    respondent_id     INTEGER NOT NULL REFERENCES respondents (id),
    start_at          INTEGER NOT NULL,
    stop_at           INTEGER,
    daily_start_time  INTEGER NOT NULL,
    flags             TEXT    NOT NULL DEFAULT '{}',
    textvars          TEXT    NOT NULL DEFAULT '{}',
    stopped_at        INTEGER,
    created_at        INTEGER NOT NULL
);
CREATE INDEX protocol_subscriptions_dossier ON protocol_subscriptions (dossier_id, id);

CREATE TABLE non_responses (
    id               INTEGER PRIMARY KEY,
    dossier_id       INTEGER NOT NULL REFERENCES dossiers (id),
    reason_code      TEXT    NOT NULL,
    reason_other     TEXT    NOT NULL DEFAULT '',
    non_response_at  INTEGER NOT NULL
);
CREATE INDEX non_responses_dossier ON non_responses (dossier_id, id);

-- AUTOINCREMENT: a deleted response's id is never handed out again.
CREATE TABLE responses (
    id                        INTEGER PRIMARY KEY AUTOINCREMENT,
    dossier_id                INTEGER NOT NULL REFERENCES dossiers (id),
    respondent_id             INTEGER NOT NULL REFERENCES respondents (id),
    questionnaire_id          INTEGER NOT NULL REFERENCES questionnaires (id),
    external_id               TEXT,
    completer_type            TEXT    NOT NULL,
    flags                     TEXT    NOT NULL DEFAULT '{}',
    textvars                  TEXT    NOT NULL DEFAULT '{}',
    measurement_id            INTEGER REFERENCES measurements (id),
    protocol_subscription_id  INTEGER REFERENCES protocol_subscriptions (id),
    non_response_id           INTEGER REFERENCES non_responses (id),
    open_from                 INTEGER,
    open_till                 INTEGER,
    started_at                INTEGER,
    completed_at              INTEGER,
    aborted_at                INTEGER,
    withdrawn_at              INTEGER,
    answers                   TEXT    NOT NULL DEFAULT '{}',
    outcome                   TEXT,
    outcome_plugin            TEXT,
    outcome_plugin_version    TEXT,
    outcome_plugin_sha256     TEXT,
    outcome_computed_at       INTEGER,
    requesters                TEXT    NOT NULL DEFAULT '[]',
    entered_by                TEXT,
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL,
    -- NULLs are distinct, so prepared responses without an external id never clash.
    CONSTRAINT responses_external_id_key UNIQUE (dossier_id, external_id)
);
CREATE INDEX responses_dossier ON responses (dossier_id, id);
CREATE INDEX responses_subscription ON responses (protocol_subscription_id) WHERE protocol_subscription_id IS NOT NULL;
