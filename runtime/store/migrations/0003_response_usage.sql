-- The tokens a shadow answer to ask_others spent, counted to the session
-- it answered for: a session's usage is derived from what is stored of it,
-- and these tokens had no row of their own, so a run's total came out
-- larger than the sum of its sessions.
ALTER TABLE question_responses ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE question_responses ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
