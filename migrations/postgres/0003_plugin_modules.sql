-- Every plugin module version the host ever served, by content hash, so a
-- stored outcome (responses.outcome_plugin_sha256) can be recomputed with
-- exactly the code that computed it.
CREATE TABLE plugin_modules (
    sha256      TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    module      BYTEA   NOT NULL,
    first_seen  BIGINT  NOT NULL
);
CREATE INDEX plugin_modules_name ON plugin_modules (name, first_seen);
CREATE INDEX responses_completed ON responses (questionnaire_id, completed_at) WHERE completed_at IS NOT NULL;
