-- PostgreSQL roles for outcomes (docs/operations.md#access-log), step 2 of 2.
--
-- Run as outcomes_owner in the database outcomes after every
-- `outcomes migrate` (it is idempotent; a migration may add tables):
--     psql -v ON_ERROR_STOP=1 -U outcomes_owner -d outcomes -f deploy/postgres-grants.sql
--
-- The service role gets what serving needs and no more: no DDL, and on the
-- access log only INSERT and SELECT. The append-only triggers stay; they
-- also stop the owner's mistakes, and the grants keep a compromised service
-- from disabling them.

-- Nobody but the owner creates anything in the schema.
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO outcomes_service;

-- The service's data: read and written.
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO outcomes_service;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO outcomes_service;

-- The access log: appended to and read, never changed. Its ids come from
-- its own trigger, never from the service.
REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON access_log FROM outcomes_service;
REVOKE ALL ON SEQUENCE access_log_ids FROM outcomes_service;
-- Its chain head: read and moved on (the hash column only).
REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON access_log_head FROM outcomes_service;
GRANT SELECT ON access_log_head TO outcomes_service;
GRANT UPDATE (hash) ON access_log_head TO outcomes_service;

-- An alarm's history: appended to and read, never changed.
REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON alarm_events FROM outcomes_service;

-- The migrations' record: read only (the service checks it is current).
REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON _sqlx_migrations FROM outcomes_service;
GRANT SELECT ON _sqlx_migrations TO outcomes_service;
