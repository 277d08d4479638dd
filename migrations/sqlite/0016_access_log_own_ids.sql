-- Access-log ids come from the log itself only
-- (docs/operations.md#access-log).
-- migrations/postgres/0016_access_log_own_ids.sql is the same in
-- PostgreSQL's dialect.
--
-- `outcomes access-log verify` walks the hash chain in id order, which is
-- the order of appends only while every id is the one SQLite gives a new
-- row (one past the largest, under the database's write lock). A row
-- inserted with an id of its choosing (among the chain's past, or the
-- largest possible, after which SQLite picks ids at random) broke every
-- verification after it for good. Now such an insert is refused.
--
-- This guards against statements, not against the file: whoever may
-- write the database file can drop these triggers, or rewrite the log and
-- its hashes, so on SQLite the file's permissions (docs/operations.md#files-and-permissions)
-- and a copy of the chain's head kept elsewhere are what show tampering.

-- Before an insert SQLite shows an id it is about to give as -1.
CREATE TRIGGER access_log_own_id BEFORE INSERT ON access_log
WHEN NEW.id <> -1
BEGIN SELECT RAISE(ABORT, 'access_log: ids come from the log itself; an insert may not give one'); END;

-- So a row that names -1 itself passes the trigger above; the log's own
-- ids start at 1, so it is refused once inserted.
CREATE TRIGGER access_log_own_id_given_as_minus_one AFTER INSERT ON access_log
WHEN NEW.id < 1
BEGIN SELECT RAISE(ABORT, 'access_log: ids come from the log itself; an insert may not give one'); END;
