-- Shadow scoring (docs/operations.md#verifying-outcomes-and-trying-a-new-scorer):
-- at most one candidate version per scorer, kept in the database so every
-- host sharing it scores with the same candidate. The module itself is in
-- plugin_modules. live_sha256 is the version it was installed against;
-- once promoted (promoted_at set), the candidate serves in place of
-- exactly that version, on every host, until the plugin folder holds
-- another one. calls and dropped are summed over all hosts.
CREATE TABLE plugin_candidates (
    name          TEXT    PRIMARY KEY,
    sha256        TEXT    NOT NULL,
    version       TEXT    NOT NULL,
    live_sha256   TEXT    NOT NULL,
    live_version  TEXT    NOT NULL,
    installed_at  INTEGER NOT NULL,
    calls         INTEGER NOT NULL DEFAULT 0,
    dropped       INTEGER NOT NULL DEFAULT 0,
    promoted_at   INTEGER
);

-- A response the candidate scored otherwise than the live version, with
-- both outcomes as JSON text. Patient data: read by operators' commands
-- only, never by the API.
CREATE TABLE shadow_differences (
    id                 INTEGER PRIMARY KEY,
    plugin             TEXT    NOT NULL,
    candidate_sha256   TEXT    NOT NULL,
    live_sha256        TEXT,
    response_id        INTEGER NOT NULL,
    live_outcome       TEXT    NOT NULL,
    candidate_outcome  TEXT    NOT NULL,
    recorded_at        INTEGER NOT NULL
);
CREATE INDEX shadow_differences_candidate ON shadow_differences (plugin, candidate_sha256, id);
