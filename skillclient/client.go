// Package skillclient reads Agent Skills from any MCP server that serves
// the Skills Extension (io.modelcontextprotocol/skills), over a
// [*mcp.ClientSession] the application already has, and verifies every
// byte against the server's own skill entry before it is used.
//
// [Client] lists, gets and reads; it decodes and checks each listed entry
// on its own ([DecodeEntry]), so one hostile entry never hides the others,
// and [Fetch] is its one verified read. [VerifyResource] and
// [VerifySkillMD] are the pure checks it applies, for callers that fetch
// content some other way (a cache, a proxy). Over Streamable HTTP, give
// the transport [HTTPClient]: it bounds every answer by what its request
// can legitimately receive and keeps credentials to their origin
// (docs/client.md). Approval, origin labels and what a model may see are
// a host's business: package host builds all of that on this one.
//
// The package is not named client, so that it never shadows the
// client := mcp.NewClient(...) variable every go-sdk program has.
package skillclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/internal/paging"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// DefaultMaxPages bounds how many pages a listing walks, so that a server
// handing out cursors forever cannot keep a client busy.
const DefaultMaxPages = paging.DefaultMaxPages

// Errors that end (or, for ErrRestarted, restart) a listing; each comes
// wrapped in a [*PageError] naming the method and the page.
var (
	// ErrTooManyPages: the listing reached Options.MaxPages with the server
	// still sending cursors.
	ErrTooManyPages = paging.ErrTooManyPages
	// ErrRepeatedCursor: the server sent a cursor it had sent before.
	ErrRepeatedCursor = paging.ErrRepeatedCursor
	// ErrRestarted: the server refused a later page's cursor as invalid
	// (its skills changed while listing); the listing starts again from
	// the first page, so what came before is stale. Only with
	// Options.Restarts.
	ErrRestarted = paging.ErrRestarted
)

// PageError is a listing's failure: the method, the page (from 1), and
// the cause, a call's error or one of the errors above.
type PageError = paging.Error

// Register lets sessions of c send the extension's methods. go-sdk
// clients send only the methods registered on them, so call it once per
// [*mcp.Client], before [Client] is used on one of its sessions.
func Register(c *mcp.Client) error {
	return errors.Join(
		mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *ListPage](c, wire.MethodListSkills),
		mcp.AddSendingCustomMethod[*wire.GetSkillParams, *getResult](c, wire.MethodGetSkill),
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
	// CallTimeout bounds each call (each page of a listing); zero leaves
	// only the caller's context.
	CallTimeout time.Duration
	// Restarts is how often a listing starts again from its first page
	// when the server refuses a later page's cursor because its skills
	// changed (yielded as an error wrapping ErrRestarted). Zero ends the
	// listing with that error instead.
	Restarts int
}

// Client reads the skills of the server at the other end of a session.
// It holds no state beyond the session and is safe for concurrent use.
type Client struct {
	sess *mcp.ClientSession
	opts paging.Options
}

// New returns a client over sess.
func New(sess *mcp.ClientSession, opts *Options) *Client {
	c := &Client{sess: sess}
	if opts != nil {
		c.opts = paging.Options{MaxPages: opts.MaxPages, CallTimeout: opts.CallTimeout, Restarts: opts.Restarts}
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

// ListPage is one page of skills/list as the server sent it: the result
// fields as received (any may be missing) and the entries still raw, so
// that each is decoded on its own with [DecodeEntry] and one hostile entry
// never hides the others.
type ListPage struct {
	mcp.ResultBase
	ResultType *string           `json:"resultType"`
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor,omitempty"`
	TTLMs      *int64            `json:"ttlMs"`
	CacheScope *string           `json:"cacheScope"`
}

// ListPages yields the pages of skills/list as the loop asks for more,
// within Options.MaxPages, each within Options.CallTimeout. A failed call
// ends it with a [*PageError]; so do a repeated cursor and too many pages.
// With Options.Restarts, a refused cursor is yielded as a *PageError
// wrapping ErrRestarted and the listing starts over.
func (c *Client) ListPages(ctx context.Context) iter.Seq2[*ListPage, error] {
	return paging.Walk(ctx, wire.MethodListSkills, c.opts, func(ctx context.Context, cursor string) (*ListPage, string, error) {
		res, err := call[*wire.ListSkillsParams, *ListPage](ctx, c.sess, wire.MethodListSkills, &wire.ListSkillsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res, res.NextCursor, nil
	})
}

// List yields every skill the server lists, walking skills/list page by
// page as the loop asks for more, like go-sdk's ClientSession.Tools. Each
// entry is decoded and checked on its own ([DecodeEntry]); an invalid one
// is yielded as an [*EntryError] naming it (with a nil skill) and the
// listing goes on. A URI listed twice is yielded once, the second time as
// an EntryError. A failed call ends the listing with its [*PageError].
func (c *Client) List(ctx context.Context) iter.Seq2[*wire.Skill, error] {
	return func(yield func(*wire.Skill, error) bool) {
		seen := map[string]bool{}
		n := 0
		for page, err := range c.ListPages(ctx) {
			if err != nil {
				if errors.Is(err, ErrRestarted) {
					seen, n = map[string]bool{}, 0
				}
				if !yield(nil, err) {
					return
				}
				continue
			}
			n++
			for i, raw := range page.Skills {
				s, _, err := DecodeEntry(raw)
				var ee *EntryError
				if errors.As(err, &ee) && ee.URI == "" {
					// Nothing names it: say where it is.
					ee.Msg = fmt.Sprintf("skills/list page %d, entry %d: %s", n, i+1, ee.Msg)
				}
				if err == nil && seen[s.URI] {
					err = &EntryError{URI: s.URI, Msg: "listed twice; the first entry is kept"}
				}
				if err != nil {
					if !yield(nil, err) {
						return
					}
					continue
				}
				seen[s.URI] = true
				if !yield(s, nil) {
					return
				}
			}
		}
	}
}

// getResult is skills/get's result with the entry still raw, decoded by
// [DecodeEntry] like a listed one.
type getResult struct {
	mcp.ResultBase
	Skill json.RawMessage `json:"skill"`
}

// Get returns the entry of the skill whose SKILL.md is at uri, listed or
// not, decoded and checked with [DecodeEntry]. An entry for another URI
// is refused.
func (c *Client) Get(ctx context.Context, uri string) (*wire.Skill, error) {
	if c.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.CallTimeout)
		defer cancel()
	}
	res, err := call[*wire.GetSkillParams, *getResult](ctx, c.sess, wire.MethodGetSkill, &wire.GetSkillParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("skills/get %s: %w", uri, err)
	}
	s, _, err := DecodeEntry(res.Skill)
	if err != nil {
		return nil, err
	}
	if s.URI != uri {
		return nil, &EntryError{URI: s.URI, Msg: fmt.Sprintf("skills/get %s returned another skill", clip(uri))}
	}
	return s, nil
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
	var res *wire.SkillResource
	if !entry.Resources.Dynamic {
		f, ok := listed(entry, uri)
		if !ok {
			return nil, &VerifyError{URI: uri, Err: ErrUnlisted}
		}
		res = &f
	}
	if c.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.CallTimeout)
		defer cancel()
	}
	data, mime, err := Fetch(ctx, c.sess, uri, res)
	if err != nil {
		return nil, err
	}
	if res == nil && int64(len(data)) > skill.MaxBytes {
		return nil, &VerifyError{URI: uri, Err: ErrSize, Detail: fmt.Sprintf("%d bytes from a \"dynamic\" skill, over the %d-byte limit of a whole skill", len(data), skill.MaxBytes)}
	}
	rel, _ := skilluri.Within(sk.Root, uri)
	f := &File{URI: uri, Path: rel, MIMEType: mime, Data: data, Verified: res != nil}
	if uri == entry.URI {
		if f.Document, err = ParseSkillMD(entry.URI, entry.Frontmatter, data); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Fetch reads the file at uri with resources/read and checks the answer
// against res, the file's item in its skill's manifest: exactly one
// content item, for uri; its length (unless [SizeUnknown]) before its
// digest. Over HTTP ([HTTPClient]) the answer is cut on the wire at what a
// file of res's size can take. res nil (a "dynamic" skill) checks the
// content item only: the caller bounds what it accepts. Content that fails
// is discarded and returned as a [*VerifyError]. It is the one read of
// package host too.
func Fetch(ctx context.Context, sess *mcp.ClientSession, uri string, res *wire.SkillResource) (data []byte, mime string, err error) {
	size := SizeUnknown
	if res != nil {
		size = res.Size
	}
	rr, err := sess.ReadResource(mcphttp.WithLimit(ctx, mcphttp.FileLimit(size)), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, "", fmt.Errorf("resources/read %s: %w", uri, err)
	}
	data, mime, err = Contents(rr, uri)
	if err != nil {
		return nil, "", err
	}
	if res != nil {
		if err := VerifyFile(*res, data); err != nil {
			return nil, "", err
		}
	}
	return data, mime, nil
}

// ReadDirectory yields the direct children of a directory resource (a
// skill root or a folder inside one), walking resources/directory/read
// page by page. The server must have declared directoryRead. A child that
// is not a valid URI directly inside uri, or is listed twice, is yielded
// as an [*EntryError] naming it and the listing goes on.
func (c *Client) ReadDirectory(ctx context.Context, uri string) iter.Seq2[wire.DirectoryEntry, error] {
	return func(yield func(wire.DirectoryEntry, error) bool) {
		seen := map[string]bool{}
		pages := paging.Walk(ctx, wire.MethodReadDirectory, c.opts, func(ctx context.Context, cursor string) (*wire.ReadDirectoryResult, string, error) {
			res, err := call[*wire.ReadDirectoryParams, *wire.ReadDirectoryResult](ctx, c.sess, wire.MethodReadDirectory, &wire.ReadDirectoryParams{URI: uri, Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res, res.NextCursor, nil
		})
		for res, err := range pages {
			if err != nil {
				yield(wire.DirectoryEntry{}, fmt.Errorf("%s: %w", uri, err))
				return
			}
			for _, e := range res.Resources {
				var bad string
				if rel, ok := skilluri.Within(uri, e.URI); !ok || strings.Contains(rel, "/") || seen[e.URI] {
					bad = "the directory listing of " + uri + " returned an entry that is not a direct child"
				} else if err := skilluri.Check(e.URI); err != nil {
					bad = err.Error()
				}
				if bad != "" {
					if !yield(wire.DirectoryEntry{}, &EntryError{URI: e.URI, Msg: bad}) {
						return
					}
					continue
				}
				seen[e.URI] = true
				if !yield(e, nil) {
					return
				}
			}
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
