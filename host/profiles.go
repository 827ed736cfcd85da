package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Profiles an MCP origin can be read through. The host always prefers the
// Skills Extension: the others (ProfileLegacy in profile_legacy.go,
// ProfileIndex in profile_index.go) are used only for a server that does
// not declare it, and what they carry cannot be verified the way a SEP-2640
// manifest can.
//
// ProfileSEP2640 is the Skills Extension: complete manifests with digests.
const ProfileSEP2640 = "sep2640"

// profileHooks is the host's compatibility profiles behind the core's
// hook (hook.go), registered by the init below.
type profileHooks struct{}

func init() { compatProfiles = profileHooks{} }

// hostProfiles are the profiles a server without the extension is read
// through, in order of preference. Each profile's file registers itself in
// its init and carries a build tag (skillport_no_legacy, skillport_no_index)
// that leaves it out: removing one is deleting its files (docs/profiles.md,
// "Removing a profile").
var hostProfiles []hostProfile

// registerProfile adds a profile, from its file's init.
func registerProfile(p hostProfile) {
	i, _ := slices.BinarySearchFunc(hostProfiles, p.rank, func(a hostProfile, rank int) int { return a.rank - rank })
	hostProfiles = slices.Insert(hostProfiles, i, p)
}

// hostProfile is what one profile does for the hook.
type hostProfile struct {
	name string
	rank int // order of preference: legacy 1, index 2
	// client registers the custom methods the profile sends; nil: none.
	client func(c *mcp.Client)
	// wrap wraps a new connection to see what go-sdk's client cannot;
	// nil: nothing to see. settle tells it the session is set up.
	wrap   func(c mcp.Connection, changed func()) mcp.Connection
	settle func(conn mcp.Connection)
	// pick reports whether a server is read through the profile.
	pick func(conn mcp.Connection, caps *mcp.ServerCapabilities) bool
	list func(o *originState, ctx context.Context, sess *mcp.ClientSession) ([]*Entry, error)
	// load loads an entry; nil: the core reads its SKILL.md.
	load func(h *Host, ctx context.Context, o *originState, e *Entry, grant bool) (*Loaded, error)
	// check verifies the SKILL.md the core read; nil: nothing to check.
	check func(e *Entry, data []byte) error
}

func profileNamed(name string) *hostProfile {
	for i := range hostProfiles {
		if hostProfiles[i].name == name {
			return &hostProfiles[i]
		}
	}
	return nil
}

// pick chooses how to read an origin that did not declare the extension;
// "" means it serves no skills the host can use. Call it before settle.
func (profileHooks) pick(conn mcp.Connection, caps *mcp.ServerCapabilities) string {
	for _, p := range hostProfiles {
		if p.pick(conn, caps) {
			return p.name
		}
	}
	return ""
}

// client registers the profiles' custom methods.
func (profileHooks) client(c *mcp.Client) {
	for _, p := range hostProfiles {
		if p.client != nil {
			p.client(c)
		}
	}
}

// wrap lets each profile that needs to see a connection wrap it.
func (profileHooks) wrap(c mcp.Connection, changed func()) mcp.Connection {
	for _, p := range hostProfiles {
		if p.wrap != nil {
			c = p.wrap(c, changed)
		}
	}
	return c
}

// settle lets go of the handshake results kept for pick.
func (profileHooks) settle(conn mcp.Connection) {
	for _, p := range hostProfiles {
		if p.settle != nil {
			p.settle(conn)
		}
	}
}

func (profileHooks) list(ctx context.Context, o *originState, sess *mcp.ClientSession) ([]*Entry, error) {
	if p := profileNamed(o.profile); p != nil {
		return p.list(o, ctx, sess)
	}
	return nil, fmt.Errorf("no compatibility profile %q", o.profile)
}

func (profileHooks) load(ctx context.Context, h *Host, o *originState, e *Entry, grant bool) (*Loaded, bool, error) {
	p := profileNamed(e.Profile)
	if p == nil || p.load == nil {
		return nil, false, nil
	}
	l, err := p.load(h, ctx, o, e, grant)
	return l, true, err
}

func (profileHooks) check(e *Entry, data []byte) error {
	if p := profileNamed(e.Profile); p != nil && p.check != nil {
		return p.check(e, data)
	}
	return nil
}
