-- Fill-out pages (docs/api/fill-out.md#pages): where a respondent stands
-- in a questionnaire of several pages, and the language the pages were
-- asked to speak. NULL everywhere means what it meant before this
-- migration: the first page, and the language of the browser.

-- The key of the page the respondent is on: a new session resumes there.
ALTER TABLE responses ADD COLUMN fill_out_page TEXT;
-- The language (ISO 639-1) a fill-out request asked its pages to be in.
ALTER TABLE responses ADD COLUMN fill_out_language TEXT;
-- The language (ISO 639-1) a fill-out session asked its pages to be in.
ALTER TABLE fill_out_sessions ADD COLUMN language TEXT;
