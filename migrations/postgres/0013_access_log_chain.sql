-- The access log's tamper evidence and the identity a refused caller
-- claimed (docs/api/rights.md#access-log).
-- migrations/sqlite/0013_access_log_chain.sql is the same in SQLite's dialect.

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
-- and the last id before the chain starts. Every append locks this one row
-- (SELECT ... FOR UPDATE) in the transaction that writes the rows, so the
-- appends of several hosts form one chain in id order, and the head lets
-- `outcomes access-log verify` notice rows removed from the end.
CREATE TABLE access_log_head (
    id           BIGINT  PRIMARY KEY CHECK (id = 1),
    hash         TEXT    NOT NULL,
    chain_start  BIGINT  NOT NULL
);
INSERT INTO access_log_head (id, hash, chain_start)
SELECT 1, repeat('0', 64), COALESCE(MAX(id), 0) FROM access_log;
-- Identity ids handed out later are larger than every id so far.

CREATE FUNCTION access_log_head_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'access_log_head: only its hash changes';
END;
$$;
CREATE TRIGGER access_log_head_one_row BEFORE INSERT OR DELETE ON access_log_head
    FOR EACH ROW EXECUTE FUNCTION access_log_head_fixed();
CREATE TRIGGER access_log_head_no_truncate BEFORE TRUNCATE ON access_log_head
    FOR EACH STATEMENT EXECUTE FUNCTION access_log_head_fixed();
CREATE TRIGGER access_log_head_start_fixed BEFORE UPDATE OF id, chain_start ON access_log_head
    FOR EACH ROW WHEN (OLD.chain_start IS DISTINCT FROM NEW.chain_start OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION access_log_head_fixed();
