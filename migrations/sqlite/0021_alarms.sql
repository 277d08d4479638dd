-- Alarms someone answers for (docs/api/alarms.md): a stored outcome whose
-- action is `alarm` (or `attention`, where configured) raises one, with a
-- deadline by which a professional must acknowledge it.
-- migrations/postgres/0021_alarms.sql is the same in PostgreSQL's dialect.
--
-- response_id has no foreign key: a deleted response closes its alarm,
-- which stays, with its history, as a record of what was raised.
CREATE TABLE alarms (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    dossier_id          INTEGER NOT NULL REFERENCES dossiers (id),
    response_id         INTEGER NOT NULL,
    questionnaire_key   TEXT    NOT NULL,
    action              TEXT    NOT NULL,
    question_keys       TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    raised_at           INTEGER NOT NULL,
    deadline            INTEGER NOT NULL,
    acknowledged_at     INTEGER,
    acknowledged_by     TEXT,
    acknowledged_note   TEXT,
    acknowledged_token  TEXT,
    escalated_at        INTEGER,
    resolved_at         INTEGER,
    resolved_reason     TEXT,
    resolved_by         TEXT,
    resolved_note       TEXT,
    resolved_token      TEXT
);
CREATE INDEX alarms_dossier ON alarms (dossier_id, id);
CREATE INDEX alarms_response ON alarms (response_id);
CREATE INDEX alarms_open_deadline ON alarms (deadline) WHERE state = 'open';

-- Every step of every alarm, in order, never changed: raised,
-- acknowledged, escalated, resolved (with the reason). Its id is the
-- event's stable id, for a delivery outbox to read from.
CREATE TABLE alarm_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    alarm_id      INTEGER NOT NULL REFERENCES alarms (id),
    event         TEXT    NOT NULL,
    at            INTEGER NOT NULL,
    consumer_key  TEXT,
    professional  TEXT,
    note          TEXT,
    reason        TEXT
);
CREATE INDEX alarm_events_alarm ON alarm_events (alarm_id, id);
