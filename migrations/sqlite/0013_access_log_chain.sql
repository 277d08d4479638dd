-- The access log's tamper evidence and the identity a refused caller
-- claimed (docs/api/rights.md#access-log).
-- migrations/postgres/0013_access_log_chain.sql is the same in PostgreSQL's
-- dialect.

-- Who a refused caller claimed to be (Basic user name, or the JWT's kid,
-- iss and sub, none of them verified). consumer_key and jwt_issuer hold
-- verified identities only from now on; rows written before this
-- migration keep what they had (a refusal's claimed key in consumer_key).
ALTER TABLE access_log ADD COLUMN claimed_key TEXT;
ALTER TABLE access_log ADD COLUMN claimed_issuer TEXT;
ALTER TABLE access_log ADD COLUMN claimed_subject TEXT;

-- Each row written from now on carries SHA-256 (hex) of its fields and of
-- the row before it (prev_hash), in id order. Adding columns does not
-- update a row, so the append-only triggers stay as they are, and rows
-- written before this migration are left as they were: outside the chain,
-- without a hash.
ALTER TABLE access_log ADD COLUMN prev_hash TEXT;
ALTER TABLE access_log ADD COLUMN hash TEXT;

-- The chain's head: the hash of its last row (64 zeros before the first),
-- and the last id before the chain starts. Appends hold SQLite's write
-- lock (BEGIN IMMEDIATE), so the chain is in id order; the head lets
-- `outcomes access-log verify` notice rows removed from the end.
CREATE TABLE access_log_head (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    hash         TEXT    NOT NULL,
    chain_start  INTEGER NOT NULL
);
INSERT INTO access_log_head (id, hash, chain_start)
SELECT 1, '0000000000000000000000000000000000000000000000000000000000000000', COALESCE(MAX(id), 0) FROM access_log;

CREATE TRIGGER access_log_head_no_delete BEFORE DELETE ON access_log_head
BEGIN SELECT RAISE(ABORT, 'access_log_head: only its hash changes'); END;
CREATE TRIGGER access_log_head_no_insert BEFORE INSERT ON access_log_head
BEGIN SELECT RAISE(ABORT, 'access_log_head: only its hash changes'); END;
CREATE TRIGGER access_log_head_start_fixed BEFORE UPDATE OF id, chain_start ON access_log_head
WHEN OLD.chain_start IS NOT NEW.chain_start OR OLD.id IS NOT NEW.id
BEGIN SELECT RAISE(ABORT, 'access_log_head: only its hash changes'); END;
