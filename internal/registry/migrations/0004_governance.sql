-- Governance: review before release, per namespace, and an audit log.
--
-- The event log of 0001 becomes the audit log (one place for every change,
-- not two): it also records the namespace, where the change came from and
-- whether it was refused, and it is append-only.
ALTER TABLE events ADD COLUMN namespace text NOT NULL DEFAULT '';
-- Where the change came from: a client's address for a change made over
-- HTTP; for a change made with the database's credentials, the database
-- client's address ("db:local" on a Unix socket). Rows recorded before
-- this migration say nothing ('').
ALTER TABLE events ADD COLUMN origin text NOT NULL DEFAULT '';
ALTER TABLE events ALTER COLUMN origin SET DEFAULT ('db:' || coalesce(host(inet_client_addr()), 'local'));
ALTER TABLE events ADD COLUMN outcome text NOT NULL DEFAULT 'ok' CHECK (outcome IN ('ok', 'refused'));
CREATE INDEX events_at ON events (at);

CREATE FUNCTION skillport_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'restrict_violation',
		MESSAGE = 'events is the append-only audit log: its rows are never changed or deleted';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON events
	FOR EACH STATEMENT EXECUTE FUNCTION skillport_audit_append_only();

-- Review before release. A namespace's mode is that of the longest policy
-- prefix containing it ('' is every namespace); none means off.
CREATE TABLE review_policies (
	prefix text PRIMARY KEY,
	mode   text NOT NULL CHECK (mode IN ('off', 'observe', 'enforce')),
	set_by text NOT NULL,
	set_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION skillport_review_mode(ns text) RETURNS text LANGUAGE sql STABLE AS $$
	SELECT coalesce((SELECT mode FROM review_policies
		WHERE prefix = '' OR ns = prefix OR starts_with(ns, prefix || '/')
		ORDER BY length(prefix) DESC LIMIT 1), 'off')
$$;

-- A version published with review off is 'published'; with review on it
-- is 'pending' until a reviewer approves or rejects it. An approval names
-- the digest the reviewer saw: it stands only for that content.
ALTER TABLE versions ADD COLUMN review text NOT NULL DEFAULT 'published'
	CHECK (review IN ('published', 'pending', 'approved', 'rejected'));
ALTER TABLE versions ADD COLUMN reviewed_by text;
ALTER TABLE versions ADD COLUMN reviewed_at timestamptz;
ALTER TABLE versions ADD COLUMN review_reason text NOT NULL DEFAULT '';
ALTER TABLE versions ADD COLUMN approved_digest text;
CREATE INDEX versions_pending ON versions (namespace) WHERE review = 'pending';

-- The rules of review, for whoever holds the database's credentials too:
-- only a pending version is reviewed, by someone other than its publisher,
-- and an approval names the version's own digest.
CREATE FUNCTION skillport_check_review() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.review IS DISTINCT FROM OLD.review THEN
		IF OLD.review <> 'pending' OR NEW.review NOT IN ('approved', 'rejected') THEN
			RAISE EXCEPTION USING ERRCODE = 'check_violation',
				MESSAGE = format('%s version %s is %s: only a pending version is approved or rejected', NEW.path, NEW.version, OLD.review);
		END IF;
		IF NEW.reviewed_by IS NULL OR NEW.reviewed_by = NEW.published_by THEN
			RAISE EXCEPTION USING ERRCODE = 'check_violation',
				MESSAGE = format('%s version %s: its publisher cannot review it', NEW.path, NEW.version);
		END IF;
		IF NEW.review = 'approved' AND NEW.approved_digest IS DISTINCT FROM NEW.digest THEN
			RAISE EXCEPTION USING ERRCODE = 'check_violation',
				MESSAGE = format('%s version %s: the approval names another digest than the version''s', NEW.path, NEW.version);
		END IF;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER versions_check_review BEFORE UPDATE OF review ON versions
	FOR EACH ROW EXECUTE FUNCTION skillport_check_review();

-- A skill never serves a rejected version, nor a pending one where review
-- is enforced: checked once per statement, as 0003 checks the rest.
CREATE FUNCTION skillport_check_served() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	bad text;
BEGIN
	SELECT n.path INTO bad FROM new_rows n JOIN versions v ON v.path = n.path AND v.version = n.current
		WHERE v.review = 'rejected' OR (v.review = 'pending' AND skillport_review_mode(n.namespace) = 'enforce')
		LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'check_violation',
			MESSAGE = format('skill %s: its current version would be one that review has not released', bad);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER skills_check_served_insert AFTER INSERT ON skills
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION skillport_check_served();
CREATE TRIGGER skills_check_served_update AFTER UPDATE ON skills
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION skillport_check_served();
