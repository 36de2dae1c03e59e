-- The schema of a new database: what the migrations in migrations/ leave,
-- as SQLite stores it. Written by
-- go test ./runtime/store -run TestSchemaMatchesMigrations -update
-- version: 9

CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    goal              TEXT NOT NULL,
    status            TEXT NOT NULL,
    provider          TEXT NOT NULL DEFAULT '',
    model             TEXT NOT NULL DEFAULT '',
    scripted          INTEGER NOT NULL DEFAULT 0,
    workspace         TEXT NOT NULL DEFAULT '',
    result            TEXT NOT NULL DEFAULT '',
    error             TEXT NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    human_skip_all    INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    ended_at          TEXT NOT NULL DEFAULT ''
, base_url TEXT NOT NULL DEFAULT '', pauses TEXT NOT NULL DEFAULT '', human_absent INTEGER NOT NULL DEFAULT 0);

CREATE TABLE messages (
    id                INTEGER PRIMARY KEY,
    run_id            TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    idx               INTEGER NOT NULL,
    role              TEXT NOT NULL,
    content           TEXT NOT NULL DEFAULT '',
    content_ref       INTEGER NOT NULL DEFAULT 0,
    tool_calls        TEXT NOT NULL DEFAULT '',
    tool_call_id      TEXT NOT NULL DEFAULT '',
    synthetic         INTEGER NOT NULL DEFAULT 0,
    no_reply          INTEGER NOT NULL DEFAULT 0,
    source            TEXT NOT NULL DEFAULT 'system',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL
, inbox_id INTEGER NOT NULL DEFAULT 0);

CREATE INDEX messages_run ON messages (run_id);

CREATE TABLE shared_contents (
    id      INTEGER PRIMARY KEY,
    content TEXT NOT NULL
);

CREATE TABLE inbox (
    id           INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    key          TEXT NOT NULL,
    kind         TEXT NOT NULL,
    waking       INTEGER NOT NULL DEFAULT 0,
    content      TEXT NOT NULL,
    content_ref  INTEGER NOT NULL DEFAULT 0,
    source       TEXT NOT NULL DEFAULT 'system',
    from_session TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    delivered_at TEXT NOT NULL DEFAULT '',
    consumed_by  TEXT NOT NULL DEFAULT '',
    UNIQUE (run_id, key)
);

CREATE TABLE call_effects (
    run_id     TEXT NOT NULL,
    session_id TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    n          INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    result     TEXT NOT NULL,
    PRIMARY KEY (run_id, session_id, call_id, n)
) WITHOUT ROWID;

CREATE TABLE broadcasts (
    run_id       TEXT NOT NULL,
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    from_session TEXT NOT NULL DEFAULT '',
    from_label   TEXT NOT NULL DEFAULT '',
    category     TEXT NOT NULL DEFAULT '',
    target       TEXT NOT NULL,
    message      TEXT NOT NULL,
    no_reply     INTEGER NOT NULL DEFAULT 1,
    skipped      INTEGER NOT NULL DEFAULT 0,
    delivered    TEXT NOT NULL DEFAULT ',',
    skipped_list TEXT NOT NULL DEFAULT '[]',
    created_at   TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

CREATE INDEX broadcasts_seq ON broadcasts (run_id, seq);

CREATE TABLE plan_tasks (
    run_id       TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    id           TEXT NOT NULL,
    pos          INTEGER NOT NULL,
    description  TEXT NOT NULL,
    status       TEXT NOT NULL,
    depends_on   TEXT NOT NULL DEFAULT '[]',
    note         TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    completed_at TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, session_id, id)
) WITHOUT ROWID;

CREATE TABLE questions (
    run_id          TEXT NOT NULL,
    id              TEXT NOT NULL,
    from_session    TEXT NOT NULL,
    kind            TEXT NOT NULL,
    question        TEXT NOT NULL,
    allow_human     INTEGER NOT NULL,
    options         TEXT NOT NULL DEFAULT '[]',
    multi_select    INTEGER NOT NULL DEFAULT 0,
    recipients      TEXT NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL,
    human_responded INTEGER NOT NULL DEFAULT 0,
    timed_out       TEXT NOT NULL DEFAULT '[]',
    created_at      TEXT NOT NULL,
    deadline        TEXT NOT NULL DEFAULT '',
    closed_at       TEXT NOT NULL DEFAULT '', human_skipped INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, id)
) WITHOUT ROWID;

CREATE TABLE question_responses (
    run_id      TEXT NOT NULL,
    question_id TEXT NOT NULL,
    responder   TEXT NOT NULL,
    name        TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_at  TEXT NOT NULL, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, question_id, responder)
) WITHOUT ROWID;

CREATE TABLE human_answers (
    question_key TEXT PRIMARY KEY,
    answer       TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    run_id   TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    data     TEXT NOT NULL
);

CREATE UNIQUE INDEX events_run_seq ON events (run_id, seq);

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

CREATE UNIQUE INDEX sessions_key ON sessions (run_id, id);

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

CREATE UNIQUE INDEX delegations_key ON delegations (run_id, id);
