// Package skillclient reads Agent Skills from any MCP server that serves
// the Skills Extension (io.modelcontextprotocol/skills), over a
// [*mcp.ClientSession] the application already has, and verifies every
// byte against the server's own skill entry before it is used.
//
// [Client] lists, gets and reads; [VerifyResource] and [VerifySkillMD] are
// the pure checks it applies, for callers that fetch content some other
// way (a cache, a proxy). Approval, origin labels and what a model may
// see are a host's business: package host builds all of that on this one.
//
// The package is not named client, so that it never shadows the
// client := mcp.NewClient(...) variable every go-sdk program has.
package skillclient

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host/skilluri"
	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// DefaultMaxPages bounds how many pages a listing walks, so that a server
// handing out cursors forever cannot keep a client busy.
const DefaultMaxPages = 100

// ErrTooManyPages is returned by a listing that reached Options.MaxPages
// with the server still sending cursors.
var ErrTooManyPages = errors.New("the server sent more pages than the client reads")

// Register lets sessions of c send the extension's methods. go-sdk
// clients send only the methods registered on them, so call it once per
// [*mcp.Client], before [Client] is used on one of its sessions.
func Register(c *mcp.Client) error {
	return errors.Join(
		mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](c, wire.MethodListSkills),
		mcp.AddSendingCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](c, wire.MethodGetSkill),
		mcp.AddSendingCustomMethod[*wire.ReadDirectoryParams, *wire.ReadDirectoryResult](c, wire.MethodReadDirectory),
	)
}

// call sends method, turning go-sdk's failures of registration into
// errors that say what to do: an unregistered method is an error, and a
// method registered with other result types (by another library sharing
// the client) would make go-sdk panic.
func call[P interface {
	*PT
	mcp.Params
}, R mcp.Result, PT any](ctx context.Context, sess *mcp.ClientSession, method string, p P) (res R, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: the session's client registered this method with other types than skillclient.Register does (%v); use a client of your own for skillclient", method, r)
		}
	}()
	res, err = mcp.CallCustomMethod[P, R](ctx, sess, method, p)
	if err != nil && strings.Contains(err.Error(), "is not registered") {
		err = fmt.Errorf("%w: call skillclient.Register on the mcp.Client before using skillclient", err)
	}
	return res, err
}

// Options configure a [Client]. The zero value is usable.
type Options struct {
	// MaxPages bounds the pages one List or ReadDirectory walks; zero
	// means DefaultMaxPages.
	MaxPages int
}

// Client reads the skills of the server at the other end of a session.
// It holds no state beyond the session and is safe for concurrent use.
type Client struct {
	sess *mcp.ClientSession
	max  int
}

// New returns a client over sess.
func New(sess *mcp.ClientSession, opts *Options) *Client {
	c := &Client{sess: sess, max: DefaultMaxPages}
	if opts != nil && opts.MaxPages > 0 {
		c.max = opts.MaxPages
	}
	return c
}

// Supported reports whether the server declared the Skills Extension when
// the session was initialized. A server that did not may still answer an
// older design; package host speaks those.
func (c *Client) Supported() bool {
	ir := c.sess.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	_, ok := ir.Capabilities.Extensions[wire.ExtensionID]
	return ok
}

// List yields every skill the server lists, walking skills/list page by
// page as the loop asks for more, like go-sdk's ClientSession.Tools. Each
// entry has passed [ValidateEntry]; an invalid one is yielded as an
// error wrapping [ErrInvalidEntry] (with a nil skill) and the listing
// goes on. A failed call ends the listing with its error.
func (c *Client) List(ctx context.Context) iter.Seq2[*wire.Skill, error] {
	return func(yield func(*wire.Skill, error) bool) {
		cursor := ""
		seen := map[string]bool{}
		for page := 0; ; page++ {
			if page == c.max {
				yield(nil, fmt.Errorf("skills/list: %w (%d pages)", ErrTooManyPages, c.max))
				return
			}
			res, err := call[*wire.ListSkillsParams, *wire.ListSkillsResult](ctx, c.sess, wire.MethodListSkills, &wire.ListSkillsParams{Cursor: cursor})
			if err != nil {
				yield(nil, fmt.Errorf("skills/list: %w", err))
				return
			}
			for i := range res.Skills {
				s := &res.Skills[i]
				if err := ValidateEntry(s); err != nil {
					if !yield(nil, err) {
						return
					}
					continue
				}
				if !yield(s, nil) {
					return
				}
			}
			if res.NextCursor == "" {
				return
			}
			if seen[res.NextCursor] {
				yield(nil, fmt.Errorf("skills/list: the server repeated the cursor %q", clip(res.NextCursor)))
				return
			}
			seen[res.NextCursor] = true
			cursor = res.NextCursor
		}
	}
}

// Get returns the entry of the skill whose SKILL.md is at uri, listed or
// not, checked with [ValidateEntry]. An entry for another URI is refused.
func (c *Client) Get(ctx context.Context, uri string) (*wire.Skill, error) {
	res, err := call[*wire.GetSkillParams, *wire.GetSkillResult](ctx, c.sess, wire.MethodGetSkill, &wire.GetSkillParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("skills/get %s: %w", uri, err)
	}
	if res.Skill.URI != uri {
		return nil, &EntryError{URI: res.Skill.URI, Msg: fmt.Sprintf("skills/get %s returned another skill", clip(uri))}
	}
	if err := ValidateEntry(&res.Skill); err != nil {
		return nil, err
	}
	return &res.Skill, nil
}

// File is a file of a skill as [Client.Read] returns it.
type File struct {
	// URI is the file's resource URI.
	URI string
	// Path is the file's path relative to the skill root ("SKILL.md").
	Path string
	// MIMEType is what the server reported, if anything.
	MIMEType string
	// Data is the content: exactly the bytes the entry's digest covers.
	Data []byte
	// Verified is false only for files of a "dynamic" skill, which the
	// server publishes without digests.
	Verified bool
	// Document is the parsed SKILL.md when the file is the skill's own
	// SKILL.md, whose frontmatter equals the entry's; nil otherwise.
	Document *skill.Document
}

// Read reads one file of the skill entry and verifies it. ref is a path
// relative to the skill root ("references/GUIDE.md") or a URI inside it;
// "" means the skill's own SKILL.md. The reference must stay inside the
// skill root and, unless the skill is "dynamic", be listed in the entry;
// both are checked before anything is sent. Content that fails a check
// is discarded and returned as a [*VerifyError]. A "dynamic" skill has no
// sizes to check against, so one file of it over 16 MiB, the limit of a
// whole skill, is refused with [ErrSize].
func (c *Client) Read(ctx context.Context, entry *wire.Skill, ref string) (*File, error) {
	if err := ValidateEntry(entry); err != nil {
		return nil, err
	}
	sk, _ := skilluri.ParseSkill(entry.URI)
	uri := entry.URI
	if ref != "" {
		u, err := skilluri.Resolve(sk.Root, ref)
		if err != nil {
			return nil, &VerifyError{URI: clip(ref), Err: ErrUnlisted, Detail: err.Error()}
		}
		uri = u
	}
	dynamic := entry.Resources.Dynamic
	if !dynamic {
		if err := VerifyResource(entry, uri, nil); errors.Is(err, ErrUnlisted) {
			return nil, err
		}
	}
	size := SizeUnknown
	if !dynamic {
		if f, ok := listed(entry, uri); ok {
			size = f.Size
		}
	}
	rr, err := c.sess.ReadResource(mcphttp.WithLimit(ctx, mcphttp.FileLimit(size)), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	data, mime, err := Contents(rr, uri)
	if err != nil {
		return nil, err
	}
	if dynamic && int64(len(data)) > skill.MaxBytes {
		return nil, &VerifyError{URI: uri, Err: ErrSize, Detail: fmt.Sprintf("%d bytes from a \"dynamic\" skill, over the %d-byte limit of a whole skill", len(data), skill.MaxBytes)}
	}
	rel, _ := skilluri.Within(sk.Root, uri)
	f := &File{URI: uri, Path: rel, MIMEType: mime, Data: data, Verified: !dynamic}
	if uri == entry.URI {
		f.Document, err = VerifySkillMD(entry, data)
	} else if !dynamic {
		err = VerifyResource(entry, uri, data)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadDirectory yields the direct children of a directory resource (a
// skill root or a folder inside one), walking resources/directory/read
// page by page. The server must have declared directoryRead.
func (c *Client) ReadDirectory(ctx context.Context, uri string) iter.Seq2[wire.DirectoryEntry, error] {
	return func(yield func(wire.DirectoryEntry, error) bool) {
		cursor := ""
		seen := map[string]bool{}
		for page := 0; ; page++ {
			if page == c.max {
				yield(wire.DirectoryEntry{}, fmt.Errorf("%s %s: %w (%d pages)", wire.MethodReadDirectory, uri, ErrTooManyPages, c.max))
				return
			}
			res, err := call[*wire.ReadDirectoryParams, *wire.ReadDirectoryResult](ctx, c.sess, wire.MethodReadDirectory, &wire.ReadDirectoryParams{URI: uri, Cursor: cursor})
			if err != nil {
				yield(wire.DirectoryEntry{}, fmt.Errorf("%s %s: %w", wire.MethodReadDirectory, uri, err))
				return
			}
			for _, e := range res.Resources {
				if !yield(e, nil) {
					return
				}
			}
			if res.NextCursor == "" || seen[res.NextCursor] {
				return
			}
			seen[res.NextCursor] = true
			cursor = res.NextCursor
		}
	}
}

// listed returns the manifest item of uri in entry.
func listed(entry *wire.Skill, uri string) (wire.SkillResource, bool) {
	for _, f := range entry.Resources.Files {
		if f.URI == uri {
			return f, true
		}
	}
	return wire.SkillResource{}, false
}

// HTTPClient returns the *http.Client to give mcp.StreamableClientTransport
// for a session skillclient reads through: every answer is bounded by what
// its request can legitimately receive ([Client.Read] sets the bound of a
// file from its declared size; any other answer is bounded at 32 MiB), an
// answer over its bound fails its call and not the session, and a redirect
// to another origin never carries the request's credentials. The bounds
// are in docs/client.md.
func HTTPClient() *http.Client {
	return &http.Client{Transport: &mcphttp.Transport{}, CheckRedirect: mcphttp.CheckRedirect}
}
