-- The language a response was filled out in (ISO 639-1) and, when its
-- texts came from a translation overlay rather than the definition, the
-- SHA-256 of that overlay file (docs/api/catalog.md#translations), kept
-- next to the outcome's provenance. NULL: not filled out yet, or filled
-- out before this migration. Scores never depend on either.
ALTER TABLE responses ADD COLUMN language TEXT;
ALTER TABLE responses ADD COLUMN translation_sha256 TEXT;
