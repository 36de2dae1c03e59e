-- Where the run's model server was (its base URL, without credentials), so
-- that resume finds it again: the provider label keeps only the host, and
-- a run started with --base-url was refused a plain `resume`.
ALTER TABLE runs ADD COLUMN base_url TEXT NOT NULL DEFAULT '';
