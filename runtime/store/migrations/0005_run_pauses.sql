-- When a run was stopped and then resumed, as a JSON list of
-- {"from": ..., "to": ...} (RFC 3339 times): the time it stood still is not
-- part of how long it, or a session that spanned the stop, has been going.
ALTER TABLE runs ADD COLUMN pauses TEXT NOT NULL DEFAULT '';
