-- Signed callbacks (SQLite; migrations/postgres/0012_signed_callbacks.sql is
-- the same in PostgreSQL's dialect), following Standard Webhooks.
--
-- Each token's webhook signing key, as base64 of its raw bytes: the host
-- signs with it, so it is kept usable, unlike the consumer secret's hash.
-- NULL for tokens made before this migration until `outcomes token
-- webhook-secret` makes one (it is shown once, so no migration can make it).
ALTER TABLE api_tokens ADD COLUMN webhook_secret TEXT;

-- The token that made a fill-out request signs its callbacks; NULL for
-- requests made before this migration.
ALTER TABLE fill_out_requests ADD COLUMN token_id INTEGER REFERENCES api_tokens (id);

-- The message id of a callback (`webhook-id`), the same on every attempt, so
-- a receiver can drop a repeat. Callbacks already queued get one here.
ALTER TABLE callbacks ADD COLUMN event_id TEXT;
UPDATE callbacks SET event_id = 'msg_' || lower(hex(randomblob(16))) WHERE event_id IS NULL;
CREATE UNIQUE INDEX callbacks_event_id ON callbacks (event_id);
