-- The operator's replacements for an upstream tool's own tools/list entry
-- (a JSON object; '' when none).
ALTER TABLE tools ADD COLUMN overrides TEXT NOT NULL DEFAULT '';
