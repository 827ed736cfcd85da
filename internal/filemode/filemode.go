// Package filemode decides the permission bits of a skill file written
// out by skillport: pull's files and the web catalog's archives. Where the
// source recorded the file's mode (a directory, a git tree) its execute
// bit is kept; where it recorded none (MCP carries no mode, nor does the
// registry) a file starting with "#!" is taken for a script. One rule for
// both, so that an agent gets the same files either way.
package filemode

import (
	"bytes"
	"io/fs"
)

// Mode is 0755 for a file that starts with "#!" (a script the skill's
// instructions may tell the agent to run, as ./scripts/x.sh), else 0644.
// A binary without "#!" stays 0644: whether to run one is for the user
// to decide, not the server.
func Mode(content []byte) fs.FileMode {
	if bytes.HasPrefix(content, []byte("#!")) {
		return 0o755
	}
	return 0o644
}

// FromPerm is what a catalog records of the permission bits a source
// reports: 0755 when any execute bit is set, 0644 otherwise, and 0
// (unknown) for no bits at all, which is what a tree that keeps no modes
// reports (fstest.MapFS's default). Only the execute bit is kept: an
// archive's bytes, and so its published digest, must not depend on the
// umask or the owner's write bit of the machine that serves it.
func FromPerm(perm fs.FileMode) fs.FileMode {
	switch perm := perm.Perm(); {
	case perm == 0:
		return 0
	case perm&0o111 != 0:
		return 0o755
	default:
		return 0o644
	}
}

// Of is the mode to write a file with: recorded (a catalog's
// [github.com/skillport/skillport/catalog.File].Mode) when the source
// recorded one, else [Mode] of its content.
func Of(recorded fs.FileMode, content []byte) fs.FileMode {
	if recorded != 0 {
		return recorded
	}
	return Mode(content)
}
