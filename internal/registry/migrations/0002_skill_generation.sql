-- Each skill row records the generation that last changed it, so that a
-- replica re-reads only the skills changed since the generation it serves.
ALTER TABLE skills ADD COLUMN generation bigint NOT NULL DEFAULT 0;
CREATE INDEX skills_generation ON skills (generation);
