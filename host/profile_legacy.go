//go:build !skillport_no_legacy

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// ProfileLegacy is a server with the top-level "skills" capability of
// SEP-2076 or seed 001: instructions by name, no digests at all.
const ProfileLegacy = "skills"

// unverifiedLegacy is the note set in Entry.Unverified.
const unverifiedLegacy = "served through the pre-extension skills primitive (SEP-2076 / seed 001): no digests, nothing can be verified"

// The legacy profile reads a server with the top-level "skills" capability
// through skills/list, skills/read or skills/get by name: it sees the
// handshake (sniffConn) to find that capability, which go-sdk has no field
// for.
func init() {
	registerProfile(hostProfile{
		name:   ProfileLegacy,
		rank:   1,
		client: legacyClient,
		wrap: func(c mcp.Connection, changed func()) mcp.Connection {
			return &sniffConn{Connection: c, skillsChanged: changed}
		},
		settle: func(conn mcp.Connection) {
			if sc, ok := conn.(*sniffConn); ok {
				sc.settle()
			}
		},
		pick: func(conn mcp.Connection, _ *mcp.ServerCapabilities) bool {
			sc, _ := conn.(*sniffConn)
			return sc != nil && sc.legacySkills()
		},
		list: (*originState).listLegacy,
		load: (*Host).loadLegacy,
	})
}

// legacyClient registers seed 001's methods (go-sdk's client sends only
// registered custom methods).
func legacyClient(c *mcp.Client) {
	// Registration only fails for standard method names; these are not.
	_ = mcp.AddSendingCustomMethod[*wire.NameParams, *readResult](c, wire.MethodReadSkill)
	_ = mcp.AddSendingCustomMethod[*wire.ReadReferenceParams, *referenceResult](c, wire.MethodReadReference)
}

// sniffConn keeps what the host needs of a server's handshake beyond what
// go-sdk's ServerCapabilities holds: the top-level "skills" capability of a
// legacy server, which has no field there.
type sniffConn struct {
	mcp.Connection
	skillsChanged func()

	mu sync.Mutex
	// results are the results read while the session was being set up,
	// kept as received (no copy) and decoded only if the server turns out
	// not to declare the extension: for the servers that do, decoding the
	// handshake twice was a tenth of what the host adds per origin.
	results []json.RawMessage
	settled bool // set up: no more results are kept
}

// maxSniffed bounds the results kept during set-up. The initialize (or
// server/discover) result is the first a server sends; only a server
// answering requests never made could push it past the bound, and then
// loses nothing but its own legacy profile.
const maxSniffed = 8

func (c *sniffConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	// A legacy server's notifications/skills/list_changed (SEP-2076, seed
	// 001) is handled here and not passed on: go-sdk's client knows no such
	// method and would only log it.
	for err == nil && isSkillsListChanged(msg) {
		if c.skillsChanged != nil {
			c.skillsChanged()
		}
		msg, err = c.Connection.Read(ctx)
	}
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil && len(r.Result) > 0 {
		c.mu.Lock()
		if !c.settled && len(c.results) < maxSniffed {
			c.results = append(c.results, r.Result)
		}
		c.mu.Unlock()
	}
	return msg, err
}

// legacySkills reports whether the first result with capabilities
// (initialize, or server/discover for 2026-07-28 sessions) declared a
// top-level "skills" object.
func (c *sniffConn) legacySkills() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, result := range c.results {
		var res struct {
			Capabilities *struct {
				Skills json.RawMessage `json:"skills"`
			} `json:"capabilities"`
		}
		if json.Unmarshal(result, &res) == nil && res.Capabilities != nil {
			raw := res.Capabilities.Skills
			return len(raw) > 0 && raw[0] == '{'
		}
	}
	return false
}

// settle stops keeping results and lets go of those kept.
func (c *sniffConn) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled, c.results = true, nil
}

func isSkillsListChanged(msg jsonrpc.Message) bool {
	r, ok := msg.(*jsonrpc.Request)
	return ok && !r.IsCall() && r.Method == wire.NotificationSkillsList
}

// listLegacy pages the SEP-2076 / seed-001 skills/list ({name,
// description, ...}). Such skills have no URI; the host names each one
// skill://<name>/SKILL.md, a key for its registry that is never read.
func (o *originState) listLegacy(ctx context.Context, sess *mcp.ClientSession) ([]*Entry, error) {
	var out []*Entry
	seen := map[string]bool{}
	for res, err := range o.client(sess, 0).ListPages(ctx) {
		if err != nil {
			var pe *skillclient.PageError
			if errors.As(err, &pe) && pe.Page == 1 && !errors.Is(err, skillclient.ErrTooManyPages) {
				return nil, fmt.Errorf("skills/list failed: %v", pe.Err)
			}
			break
		}
		for _, raw := range res.Skills {
			if len(out) >= o.h.opts.MaxEntries {
				o.diag(Warning, "", fmt.Sprintf("listing capped at %d entries", o.h.opts.MaxEntries), nil)
				break
			}
			e, err := decodeLegacyEntry(o.cfg.Label, raw)
			if err != nil {
				o.refuse(Diagnostic{Origin: o.cfg.Label, Severity: Warning, URI: entryURI(err), Message: "skills/list entry left out: " + entryMsg(err), Err: err})
				continue
			}
			if seen[e.Name] {
				o.diag(Warning, e.URI, "skills/list names "+e.Name+" twice; the first entry is kept", nil)
				continue
			}
			seen[e.Name] = true
			o.ingest(e)
			out = append(out, e)
		}
	}
	return out, nil
}

// decodeLegacyEntry turns one SEP-2076 / seed-001 skills/list entry into a
// registry entry of origin label, named skill://<name>/SKILL.md. Fields
// other than name and description are not used.
func decodeLegacyEntry(label string, raw json.RawMessage) (*Entry, error) {
	var le struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &le); err != nil || le.Name == "" {
		return nil, &EntryError{Origin: label, Err: ErrInvalidEntry, Msg: "entry without a usable name (a string) and description"}
	}
	uri := "skill://" + le.Name + "/SKILL.md"
	fm, err := skill.FrontmatterFromMap([]string{"name", "description"}, map[string]any{"name": le.Name, "description": le.Description})
	if err != nil {
		return nil, &EntryError{Origin: label, URI: uri, Err: ErrInvalidEntry, Msg: err.Error()}
	}
	e, err := ValidateEntry(label, &wire.Skill{URI: uri, Frontmatter: fm, Resources: &wire.Resources{Dynamic: true}})
	if err != nil {
		return nil, err
	}
	e.Profile, e.Unverified = ProfileLegacy, unverifiedLegacy
	return e, nil
}

// loadLegacy fetches the instructions of a skill of a legacy origin, with
// the list of its supporting files that the acting window then holds:
// skills/read (seed 001), else skills/get by name (SEP-2076).
func (h *Host) loadLegacy(ctx context.Context, o *originState, e *Entry, grant bool) (*Loaded, error) {
	sess, err := o.sess()
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	var (
		body  string
		set   *legacySet
		notes []string
	)
	rr, err := mcp.CallCustomMethod[*wire.NameParams, *readResult](callCtx, sess, wire.MethodReadSkill, &wire.NameParams{Name: e.Name})
	if err == nil {
		if body, set, notes, err = decodeLegacyRead(e.Name, e.Root, rr); err != nil {
			return nil, fmt.Errorf("%s: skills/read %s: %w", e.Origin, e.Name, err)
		}
	} else {
		// An unknown skill is final; anything else (-32601, or the bare
		// HTTP 400 go-sdk's HTTP handler gives an unregistered method) means
		// the server may speak SEP-2076 instead.
		var we *jsonrpc.Error
		if errors.As(err, &we) && (we.Code == jsonrpc.CodeInvalidParams || we.Code == wire.CodeSkillNotFound) {
			return nil, fmt.Errorf("%w: %s: skills/read %s: %v", ErrUnknownSkill, e.Origin, e.Name, err)
		}
		name := e.Name
		gr, err := mcp.CallCustomMethod[*wire.GetParams, *getResult](callCtx, sess, wire.MethodGetSkill, &wire.GetParams{Name: &name})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: skills/get %s: %v", ErrUnknownSkill, e.Origin, e.Name, err)
		}
		if body, set, notes, err = decodeLegacyGet(e.Root, gr); err != nil {
			return nil, fmt.Errorf("%s: skills/get %s: %w", e.Origin, e.Name, err)
		}
	}
	for _, n := range notes {
		o.diag(Warning, e.URI, "supporting file of "+e.Name+": "+n, nil)
	}
	doc := &skill.Document{Frontmatter: e.Frontmatter, Body: []byte(body), BodyLine: 1}
	// The instructions count toward the skill's retrieval limit, as a
	// dynamic skill's SKILL.md does.
	return &Loaded{Entry: e, h: h, grantTools: grant, Document: doc, Content: []byte(body), held: set, retrieved: int64(len(body))}, nil
}
