-- Respondent links (PostgreSQL): a respondent's completing_url names the
-- generation it was made in; revoking the respondent's links
-- (POST .../respondents/{id}/revoke_links, `outcomes respondent
-- revoke-links`) moves the generation on, so every completing_url handed
-- out before stops working. migrations/sqlite/0008_respondent_links.sql is
-- the same in SQLite's dialect.
ALTER TABLE respondents ADD COLUMN link_generation BIGINT NOT NULL DEFAULT 0;
