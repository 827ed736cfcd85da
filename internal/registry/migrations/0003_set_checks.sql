-- A publish inserts thousands of versions and skills at once, and
-- PostgreSQL checks a foreign key with one query per row: those checks
-- were the largest part of publishing 10,000 skills. The same rules are
-- now checked once per statement over all the rows it wrote: every version
-- and skill belongs to a namespace, and a skill's current version exists.
-- What a foreign key also prevented (deleting a namespace or version that
-- is referenced, changing their keys) is refused outright: both are
-- append-only.
--
-- Each skill also records its current version's digest, so that a publish
-- compares a namespace's skills with one read of the skills table.
ALTER TABLE versions DROP CONSTRAINT versions_namespace_fkey;
ALTER TABLE skills DROP CONSTRAINT skills_namespace_fkey;
ALTER TABLE skills DROP CONSTRAINT skills_path_current_fkey;

ALTER TABLE skills ADD COLUMN digest text NOT NULL DEFAULT '';
UPDATE skills s SET digest = v.digest FROM versions v WHERE v.path = s.path AND v.version = s.current;

CREATE FUNCTION skillport_check_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	bad record;
BEGIN
	SELECT n.path, n.namespace INTO bad FROM new_rows n
		WHERE NOT EXISTS (SELECT 1 FROM namespaces WHERE prefix = n.namespace) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
			MESSAGE = format('version of %s names namespace %L, which does not exist', bad.path, bad.namespace);
	END IF;
	RETURN NULL;
END $$;

CREATE FUNCTION skillport_check_skills() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	bad text;
BEGIN
	SELECT n.path INTO bad FROM new_rows n
		WHERE NOT EXISTS (SELECT 1 FROM namespaces WHERE prefix = n.namespace)
		OR (n.current IS NULL AND n.digest <> '')
		OR (n.current IS NOT NULL AND NOT EXISTS (SELECT 1 FROM versions v
			WHERE v.path = n.path AND v.version = n.current AND v.digest = n.digest))
		LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
			MESSAGE = format('skill %s: its namespace, current version or digest does not match what the registry holds', bad);
	END IF;
	RETURN NULL;
END $$;

CREATE FUNCTION skillport_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'restrict_violation',
		MESSAGE = format('%s rows are never deleted and their keys never change', TG_TABLE_NAME);
END $$;

CREATE TRIGGER versions_check_insert AFTER INSERT ON versions
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION skillport_check_versions();
CREATE TRIGGER skills_check_insert AFTER INSERT ON skills
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION skillport_check_skills();
CREATE TRIGGER skills_check_update AFTER UPDATE ON skills
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION skillport_check_skills();
CREATE TRIGGER versions_append_only BEFORE DELETE OR TRUNCATE OR UPDATE OF path, version, namespace, digest ON versions
	FOR EACH STATEMENT EXECUTE FUNCTION skillport_append_only();
CREATE TRIGGER namespaces_append_only BEFORE DELETE OR TRUNCATE OR UPDATE OF prefix ON namespaces
	FOR EACH STATEMENT EXECUTE FUNCTION skillport_append_only();
