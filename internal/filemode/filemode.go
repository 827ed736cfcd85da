// Package filemode decides the permission bits of a skill file written
// where its source's mode is unknown: MCP carries no mode, and a catalog
// snapshot (from a folder, git or the registry) keeps none. One rule for
// pull and for the web catalog's archives, so that an agent gets the same
// files either way.
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
