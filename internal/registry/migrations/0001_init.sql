-- The registry's first schema: content by digest, namespaces, immutable
-- skill versions, the current version of each skill, and a log of every
-- change. One row of registry_state counts changes, so that a replica can
-- tell whether its snapshot is current.
CREATE TABLE registry_state (
	id         int PRIMARY KEY CHECK (id = 1),
	generation bigint NOT NULL,
	changed_at timestamptz NOT NULL
);
INSERT INTO registry_state VALUES (1, 0, now());

CREATE TABLE blobs (
	digest text PRIMARY KEY,
	size   bigint NOT NULL,
	data   bytea NOT NULL
);

CREATE TABLE namespaces (
	prefix     text PRIMARY KEY,
	revision   bigint NOT NULL DEFAULT 0,
	created_by text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE versions (
	path          text NOT NULL,
	version       int NOT NULL,
	namespace     text NOT NULL REFERENCES namespaces,
	digest        text NOT NULL,
	size          bigint NOT NULL,
	files         int NOT NULL,
	-- json, not jsonb: the frontmatter's key order is part of what is served.
	manifest      json NOT NULL,
	published_by  text NOT NULL,
	published_at  timestamptz NOT NULL DEFAULT now(),
	source_commit text NOT NULL DEFAULT '',
	yanked_by     text,
	yanked_at     timestamptz,
	PRIMARY KEY (path, version)
);

CREATE TABLE skills (
	path       text PRIMARY KEY,
	namespace  text NOT NULL REFERENCES namespaces,
	current    int,
	updated_at timestamptz NOT NULL DEFAULT now(),
	FOREIGN KEY (path, current) REFERENCES versions (path, version)
);
CREATE INDEX skills_namespace ON skills (namespace);

CREATE TABLE events (
	id      bigserial PRIMARY KEY,
	at      timestamptz NOT NULL DEFAULT now(),
	who     text NOT NULL,
	action  text NOT NULL,
	path    text NOT NULL DEFAULT '',
	version int,
	detail  text NOT NULL DEFAULT ''
);
CREATE INDEX events_path ON events (path, id);
