-- The event log in a table with row ids. It was a WITHOUT ROWID table,
-- whose rows live in the B-tree of their key, and a row holds all the
-- events of a commit: up to megabytes. When a row overflows its page,
-- SQLite reads all of it to compare a key with it, so every insert into the
-- log, and every look for a run's last event, read megabytes once a
-- database held a few large runs. Here the rows stay where they are and
-- only their keys go in the index.
ALTER TABLE events RENAME TO events_v6;

CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    run_id   TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    data     TEXT NOT NULL
);

INSERT INTO events (run_id, seq, last_seq, data)
    SELECT run_id, seq, last_seq, data FROM events_v6 ORDER BY run_id, seq;

DROP TABLE events_v6;

CREATE UNIQUE INDEX events_run_seq ON events (run_id, seq);
