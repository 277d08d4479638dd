-- PostgreSQL roles for outcomes (docs/operations.md#access-log), step 1 of 2.
--
-- Run once, as a superuser (or a role with CREATEROLE and CREATEDB):
--     psql -v ON_ERROR_STOP=1 -f deploy/postgres-roles.sql
-- Then, as outcomes_owner, `outcomes migrate` and deploy/postgres-grants.sql.
--
-- outcomes_owner owns the database and its schema: only it runs migrations.
-- outcomes_service is what `outcomes serve` connects as: it reads and
-- writes the service's data, but may only add rows to the access log.
-- Set the passwords with \password (or use your own authentication); rename
-- the roles and the database here and in postgres-grants.sql alike.

CREATE ROLE outcomes_owner LOGIN;
CREATE ROLE outcomes_service LOGIN;
CREATE DATABASE outcomes OWNER outcomes_owner;
