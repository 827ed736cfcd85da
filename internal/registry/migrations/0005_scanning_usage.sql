-- Scanning on publish and usage counts (docs/registry-scanning.md).
--
-- A namespace's scan policy: warn (the default, also when no row applies)
-- records findings; block refuses a publish with an error-level finding.
-- The row of the longest prefix applies; '' is every namespace's default.
-- allowed_tools, when not NULL, is what a skill of the namespace may
-- pre-approve in its allowed-tools.
CREATE TABLE scan_policies (
	namespace     text PRIMARY KEY,
	mode          text NOT NULL CHECK (mode IN ('warn', 'block')),
	allowed_tools text[],
	updated_by    text NOT NULL,
	updated_at    timestamptz NOT NULL DEFAULT now()
);

-- One row per scanned version: a version without one was never scanned
-- (published before scanning, or with scanning off), which is not the
-- same as scanned clean. A rescan replaces the row and the findings.
CREATE TABLE scans (
	path       text NOT NULL,
	version    int NOT NULL,
	scanned_at timestamptz NOT NULL DEFAULT now(),
	scanners   text NOT NULL,
	PRIMARY KEY (path, version)
);

CREATE TABLE findings (
	path    text NOT NULL,
	version int NOT NULL,
	scanner text NOT NULL,
	rule_id text NOT NULL,
	level   text NOT NULL,
	file    text NOT NULL DEFAULT '',
	line    int NOT NULL DEFAULT 0,
	message text NOT NULL
);
CREATE INDEX findings_version ON findings (path, version);

-- Loads per skill, caller and day, added to by every replica's flush.
-- caller is a token's subject, '' for anonymous callers, and '(other)' for
-- callers past a replica's cardinality cap.
CREATE TABLE usage (
	path   text NOT NULL,
	day    date NOT NULL,
	caller text NOT NULL,
	loads  bigint NOT NULL,
	PRIMARY KEY (path, day, caller)
);
