-- Whether the person skipped a question, stored when they do: a question
-- still waiting for other answers when the process died was asked of the
-- person again after a resume.
ALTER TABLE questions ADD COLUMN human_skipped INTEGER NOT NULL DEFAULT 0;
