-- Fill-out sessions are deleted once over for longer than
-- `fill_out_session_retention` (docs/operations.md#patient-links): the
-- scheduler looks them up by when they ended, were last used, or were
-- made (a one-time link never used). migrations/sqlite/0020_fill_out_session_purge.sql
-- is the same in SQLite's dialect.
CREATE INDEX fill_out_sessions_ended ON fill_out_sessions (ended_at);
CREATE INDEX fill_out_sessions_last_seen ON fill_out_sessions (last_seen_at);
CREATE INDEX fill_out_sessions_created ON fill_out_sessions (created_at);
