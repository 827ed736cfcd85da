-- A version's Sigstore signature bundle (docs/signing.md), stored as
-- published, byte for byte, and served under the entry's _meta
-- "io.skillport/signature". NULL: the version is unsigned. The bundle
-- binds the skill's URI, so it is made for the registry's path of the
-- skill (skillport publish --sign-key signs after the prefix applies).
ALTER TABLE versions ADD COLUMN signature text;
