-- Fill-out requests (SQLite): a batch of questionnaires for a dossier's
-- respondent, with callbacks to the EPD when it opens, at reminders and when
-- it expires. migrations/postgres/0006_fill_out_requests.sql is the same in
-- PostgreSQL's dialect.
CREATE TABLE fill_out_requests (
    id             INTEGER PRIMARY KEY,
    dossier_id     INTEGER NOT NULL REFERENCES dossiers (id),
    respondent_id  INTEGER NOT NULL REFERENCES respondents (id),
    callback_url   TEXT,
    -- Seconds after open_from, as a JSON array.
    reminders      TEXT    NOT NULL DEFAULT '[]',
    open_from      INTEGER NOT NULL,
    open_till      INTEGER NOT NULL,
    withdrawn_at   INTEGER,
    created_at     INTEGER NOT NULL
);
CREATE INDEX fill_out_requests_dossier ON fill_out_requests (dossier_id, id);

-- A fill-out request is an invitation too.
ALTER TABLE invitations ADD COLUMN fill_out_request_id INTEGER REFERENCES fill_out_requests (id);
CREATE INDEX invitations_fill_out_request ON invitations (fill_out_request_id) WHERE fill_out_request_id IS NOT NULL;

-- The callbacks to send (an outbox): one row per event. next_attempt_at is
-- when the scheduler next tries it; NULL once delivered, given up or
-- cancelled. A claimed callback's next_attempt_at is pushed past its lease,
-- so another host does not send it at the same time.
CREATE TABLE callbacks (
    id                   INTEGER PRIMARY KEY,
    fill_out_request_id  INTEGER NOT NULL REFERENCES fill_out_requests (id),
    event                TEXT    NOT NULL,
    due_at               INTEGER NOT NULL,
    next_attempt_at      INTEGER,
    attempts             INTEGER NOT NULL DEFAULT 0,
    delivered_at         INTEGER,
    given_up_at          INTEGER,
    cancelled_at         INTEGER,
    last_error           TEXT
);
CREATE INDEX callbacks_next_attempt ON callbacks (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX callbacks_fill_out_request ON callbacks (fill_out_request_id);
