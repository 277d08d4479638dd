-- Alarm delivery (docs/api/alarms.md#delivery): each raised and escalated
-- alarm is sent as a signed webhook. migrations/postgres/0022_alarm_deliveries.sql
-- is the same in PostgreSQL's dialect.

-- Where a token's alarms go: the endpoint of the token that stored the
-- response; NULL: the global one (`alarm_webhook_url`), if configured.
ALTER TABLE api_tokens ADD COLUMN alarm_webhook_url TEXT;

-- The outbox: one row per (alarm event, destination), written in the
-- transaction that records the event, so an alarm on disk is delivered
-- eventually. token_id names the token whose endpoint and key it goes
-- to; NULL: the global endpoint, signed with the host secret
-- `alarm_webhook_secret`. event_id is the `webhook-id`, the same on every
-- attempt. next_attempt_at is when it is next tried (pushed past a lease
-- when claimed, so two hosts never send it at once); NULL once delivered
-- or given up.
CREATE TABLE alarm_deliveries (
    id               INTEGER PRIMARY KEY,
    alarm_event_id   INTEGER NOT NULL REFERENCES alarm_events (id),
    token_id         INTEGER REFERENCES api_tokens (id),
    url              TEXT    NOT NULL,
    event_id         TEXT    NOT NULL UNIQUE,
    next_attempt_at  INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    delivered_at     INTEGER,
    given_up_at      INTEGER,
    last_error       TEXT,
    UNIQUE (alarm_event_id, url)
);
CREATE INDEX alarm_deliveries_next_attempt ON alarm_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
