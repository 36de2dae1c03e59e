-- Whether nobody can answer the run's questions in the process that runs it
-- now: a headless run without --control, or one whose control input ended.
-- Written when the run starts, when it is resumed and when that changes, so
-- that `swarmdeck view` of the run, from another process or later, does not
-- show a question as waiting for an answer that no person can give. Runs
-- stored before it assume a person, as they did.
ALTER TABLE runs ADD COLUMN human_absent INTEGER NOT NULL DEFAULT 0;
