-- The responses a non-response wraps, by the non-response: its
-- response_ids, and a dossier's non-responses listed with theirs
-- (decisions.md §5). Partial: most responses are in no non-response.
-- migrations/postgres/0005_non_responses.sql is the same index.
CREATE INDEX responses_non_response ON responses (non_response_id) WHERE non_response_id IS NOT NULL;
