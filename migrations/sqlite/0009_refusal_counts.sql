-- Refusals without valid credentials are counted per client, route and
-- status each minute and written as one row carrying the count
-- (docs/api/rights.md#access-log). NULL: a row of one request.
ALTER TABLE access_log ADD COLUMN refusals BIGINT;
