-- Sessions and delegations in tables with row ids, like the event log in
-- migration 7. Keyed by (run_id, id) WITHOUT ROWID, a row lived in the
-- B-tree of its key, and a session's task and result, or a delegation's,
-- often make it overflow its page: SQLite then reads all of such a row to
-- compare a key with it, so every write of a session (several a turn) read
-- whole rows on its way down the tree, and the tree grew deep with a few
-- rows per page. Here only the keys go in the index.

ALTER TABLE sessions RENAME TO sessions_v7;

CREATE TABLE sessions (
    run_id            TEXT NOT NULL,
    id                TEXT NOT NULL,
    parent_id         TEXT NOT NULL DEFAULT '',
    agent             TEXT NOT NULL,
    label             TEXT NOT NULL DEFAULT '',
    title             TEXT NOT NULL DEFAULT '',
    task              TEXT NOT NULL DEFAULT '',
    kind              TEXT NOT NULL DEFAULT 'task',
    status            TEXT NOT NULL,
    reason            TEXT NOT NULL DEFAULT '',
    depth             INTEGER NOT NULL DEFAULT 0,
    shared_context    TEXT NOT NULL DEFAULT '{}',
    wait_on           TEXT NOT NULL DEFAULT '[]',
    refs              TEXT NOT NULL DEFAULT '[]',
    result            TEXT NOT NULL DEFAULT '',
    error             TEXT NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    turns             INTEGER NOT NULL DEFAULT 0,
    completions       INTEGER NOT NULL DEFAULT 0,
    spawn_call        TEXT NOT NULL DEFAULT '',
    delegation_id     TEXT NOT NULL DEFAULT '',
    last_tool         TEXT NOT NULL DEFAULT '',
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    ended_at          TEXT NOT NULL DEFAULT ''
);

INSERT INTO sessions (
    run_id, id, parent_id, agent, label, title, task, kind, status, reason, depth,
    shared_context, wait_on, refs, result, error, prompt_tokens, completion_tokens,
    total_tokens, turns, completions, spawn_call, delegation_id, last_tool, created_at,
    updated_at, ended_at
)
SELECT
    run_id, id, parent_id, agent, label, title, task, kind, status, reason, depth,
    shared_context, wait_on, refs, result, error, prompt_tokens, completion_tokens,
    total_tokens, turns, completions, spawn_call, delegation_id, last_tool, created_at,
    updated_at, ended_at
FROM sessions_v7 ORDER BY run_id, id;

DROP TABLE sessions_v7;

CREATE UNIQUE INDEX sessions_key ON sessions (run_id, id);

ALTER TABLE delegations RENAME TO delegations_v7;

CREATE TABLE delegations (
    run_id         TEXT NOT NULL,
    id             TEXT NOT NULL,
    parent_session TEXT NOT NULL,
    session_id     TEXT NOT NULL DEFAULT '',
    plan_task_id   TEXT NOT NULL DEFAULT '',
    description    TEXT NOT NULL,
    status         TEXT NOT NULL,
    depth          INTEGER NOT NULL,
    custom_config  TEXT NOT NULL DEFAULT '{}',
    result         TEXT NOT NULL DEFAULT '',
    error          TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    started_at     TEXT NOT NULL DEFAULT '',
    ended_at       TEXT NOT NULL DEFAULT ''
);

INSERT INTO delegations (
    run_id, id, parent_session, session_id, plan_task_id, description, status, depth,
    custom_config, result, error, created_at, started_at, ended_at
)
SELECT
    run_id, id, parent_session, session_id, plan_task_id, description, status, depth,
    custom_config, result, error, created_at, started_at, ended_at
FROM delegations_v7 ORDER BY run_id, id;

DROP TABLE delegations_v7;

CREATE UNIQUE INDEX delegations_key ON delegations (run_id, id);
