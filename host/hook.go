package host

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// compat is the one hook through which the compatibility profiles (the
// wire designs that came before the Skills Extension: profiles.go,
// legacy.go) let the host read a server that does not declare the
// extension. The core calls it at each point where such a server differs
// and knows no profile by name; without it (compatProfiles nil) such a
// server serves no skills the host can use.
type compat interface {
	// client registers the custom methods the profiles send on c.
	client(c *mcp.Client)
	// wrap wraps a new connection to a server, to see what go-sdk's client
	// cannot (capabilities and notifications it has no field or method
	// for); changed asks for the server's skills to be listed again.
	wrap(c mcp.Connection, changed func()) mcp.Connection
	// pick names the profile a server that did not declare the extension
	// is read through, "" for none; conn is the wrapped connection.
	pick(conn mcp.Connection, caps *mcp.ServerCapabilities) string
	// settle tells the wrapped connection that the session is set up.
	settle(conn mcp.Connection)
	// list lists an origin through its profile.
	list(ctx context.Context, o *originState, sess *mcp.ClientSession) ([]*Entry, error)
	// load loads an entry listed through a profile; false leaves it to
	// the core, which reads its SKILL.md as a "dynamic" skill's and then
	// asks check.
	load(ctx context.Context, h *Host, o *originState, e *Entry, grant bool) (*Loaded, bool, error)
	// check verifies the SKILL.md the core read for e, as far as the
	// profile e was listed through allows.
	check(e *Entry, data []byte) error
}

// heldFiles are the files a profile's server listed when a skill was
// loaded, held instead of a manifest (Loaded.held).
type heldFiles interface {
	// listed is what a read may name.
	listed() []wire.SkillResource
	// read reads the file ref (a listed name, else "") or uri names;
	// false when the set has no such file.
	read(ctx context.Context, l *Loaded, ref, uri string) (*File, bool, error)
}

// compatProfiles is the host's compatibility profiles (profiles.go); nil
// reads servers through the Skills Extension alone.
var compatProfiles compat
