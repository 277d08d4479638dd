-- Candidate and promoted scorer versions are believed only when their row
-- carries a seal: an HMAC-SHA256 under a key derived from the secrets key
-- file (not in the database) over the plugin's name, the candidate's and
-- the replaced version's hashes and versions, when it was installed, how
-- many fixtures it passed and whether and when it was promoted
-- (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer). Only
-- `outcomes plugin candidate|promote` write it. Rows without one (written
-- before this migration, or by SQL alone) serve nothing and are reported.
ALTER TABLE plugin_candidates ADD COLUMN fixtures_passed BIGINT;
ALTER TABLE plugin_candidates ADD COLUMN seal TEXT;
