-- What an outcome needs to be recomputed bit for bit later
-- (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer): besides
-- the module (outcome_plugin_sha256, kept in plugin_modules), the ABI
-- version the module spoke, the SHA-256 of the questionnaire definition the
-- host scored with (kept in questionnaire_versions, so a later edit of the
-- file does not lose it), and the SHA-256 of the exact input bytes the
-- scorer read, so a reconstruction of that input is checked, not trusted.
-- NULL: scored before this migration.
ALTER TABLE responses ADD COLUMN outcome_abi_version INTEGER;
ALTER TABLE responses ADD COLUMN outcome_definition_sha256 TEXT;
ALTER TABLE responses ADD COLUMN outcome_input_sha256 TEXT;

-- Every questionnaire definition text ever imported, by its SHA-256
-- (questionnaires.sha256 names the current one). A few kilobytes a version.
CREATE TABLE questionnaire_versions (
    sha256      TEXT    PRIMARY KEY,
    key         TEXT    NOT NULL,
    definition  TEXT    NOT NULL,
    first_seen  INTEGER NOT NULL
);
INSERT INTO questionnaire_versions (sha256, key, definition, first_seen)
    SELECT sha256, key, definition, imported_at FROM questionnaires;
