-- An inbox item is delivered once a message of its session's history
-- carries its id, written in the same commit as the message; only items a
-- tool call took instead (task_wait) are marked in the inbox itself.
-- Marking every delivered item cost as much as inserting it, and the
-- index of pending items cost as much again.
ALTER TABLE messages ADD COLUMN inbox_id INTEGER NOT NULL DEFAULT 0;
DROP INDEX inbox_pending;
