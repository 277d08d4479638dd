-- Protocols in motion (SQLite): what the scheduler keeps.
-- migrations/postgres/0004_schedule.sql is the same in PostgreSQL's dialect.

-- When a subscription next needs the scheduler: its next occurrence to
-- prepare, or its stop. NULL when it needs it no more.
ALTER TABLE protocol_subscriptions ADD COLUMN next_due_at INTEGER;
CREATE INDEX protocol_subscriptions_due ON protocol_subscriptions (next_due_at)
    WHERE next_due_at IS NOT NULL;
-- One active subscription per protocol per dossier (decisions.md §5).
CREATE UNIQUE INDEX protocol_subscriptions_one_active ON protocol_subscriptions (dossier_id, protocol_id)
    WHERE stopped_at IS NULL;

-- An invitation: responses prepared together for a respondent. Each
-- occurrence of a subscription's measurement is one.
CREATE TABLE invitations (
    id                        INTEGER PRIMARY KEY,
    dossier_id                INTEGER NOT NULL REFERENCES dossiers (id),
    respondent_id             INTEGER NOT NULL REFERENCES respondents (id),
    protocol_subscription_id  INTEGER REFERENCES protocol_subscriptions (id),
    measurement_id            INTEGER REFERENCES measurements (id),
    open_from                 INTEGER NOT NULL,
    open_till                 INTEGER,
    -- When the scheduler dealt with its expiry (a non-response, or none
    -- needed); NULL before.
    settled_at                INTEGER,
    -- When the invitation was taken back (its subscription stopped before
    -- it opened).
    withdrawn_at              INTEGER,
    created_at                INTEGER NOT NULL,
    -- An occurrence is prepared once, however many schedulers run.
    CONSTRAINT invitations_occurrence UNIQUE (protocol_subscription_id, measurement_id, open_from)
);
CREATE INDEX invitations_dossier ON invitations (dossier_id, id);
CREATE INDEX invitations_unsettled ON invitations (open_till)
    WHERE settled_at IS NULL AND open_till IS NOT NULL;

ALTER TABLE responses ADD COLUMN invitation_id INTEGER REFERENCES invitations (id);
CREATE INDEX responses_invitation ON responses (invitation_id) WHERE invitation_id IS NOT NULL;
