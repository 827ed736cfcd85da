package skillserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// TestEncodedEntriesSameBytes: the skills/get and skills/list results built
// from cached entry encodings are byte for byte what encoding the result
// values gives (json.Marshal for skills/get, go-sdk's encoding, which
// leaves <, > and & unescaped, for skills/list), with and without a _meta,
// on the first request and from the cache, on every page.
func TestEncodedEntriesSameBytes(t *testing.T) {
	dir := t.TempDir()
	for name, desc := range map[string]string{
		"tags":  "Wraps <b>bold</b> & <i>italic</i> text",
		"plain": "A plain skill",
		"third": "Quotes \"here\" and a tab\there",
	} {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(full, "references"), 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: '" + desc + "'\nmetadata:\n  note: a<b&c>d\n---\n\nBody\n"
		if err := os.WriteFile(filepath.Join(full, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(full, "references", "R&D <notes>.md"), []byte("notes"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	_, srv, err := New(nil, published.NewCatalogSource(cat), &Options{Logger: log, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	declared := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{wire.ExtensionID: map[string]any{}}}}
	for _, meta := range []mcp.Meta{nil, {"note": "<&>"}} {
		for round := range 2 { // the second round is served from the cache
			cursor := ""
			for page := 0; ; page++ {
				res, err := srv.listAny(ctx, nil, &wire.ListSkillsParams{ParamsBase: mcp.ParamsBase{Meta: declared}, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if res.page == nil {
					t.Fatalf("round %d page %d: a declaring client's skills/list was not served from an encoded page", round, page)
				}
				stable, err := srv.listSkills(ctx, &wire.ListSkillsParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				ttl := stable.TTLMs
				want := &wire.ListResult{ResultBase: mcp.ResultBase{Meta: meta}, ResultType: stable.ResultType, NextCursor: stable.NextCursor, TTLMs: &ttl, CacheScope: stable.CacheScope}
				for _, e := range stable.Skills {
					want.Skills = append(want.Skills, wire.ListEntry{URI: e.URI, Frontmatter: e.Frontmatter.JSON(), Resources: e.Resources})
				}
				res.Meta = meta
				got, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				wantB, _ := marshal(want, false)
				if string(got) != string(wantB) {
					t.Errorf("round %d page %d skills/list:\n got %s\nwant %s", round, page, got, wantB)
				}
				if !json.Valid(got) {
					t.Errorf("skills/list result is not JSON: %s", got)
				}
				if cursor = stable.NextCursor; cursor == "" {
					break
				}
			}
			for _, sk := range cat.Skills() {
				uri := sk.URI
				res, err := srv.getAny(ctx, &wire.GetParams{URI: &uri})
				if err != nil {
					t.Fatal(err)
				}
				stable, err := srv.getSkill(ctx, &wire.GetSkillParams{URI: uri})
				if err != nil {
					t.Fatal(err)
				}
				stable.ResultBase = mcp.ResultBase{Meta: meta}
				res.ResultBase = mcp.ResultBase{Meta: meta}
				got, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				wantB, _ := json.Marshal(stable)
				if string(got) != string(wantB) {
					t.Errorf("round %d skills/get %s:\n got %s\nwant %s", round, uri, got, wantB)
				}
			}
		}
	}
}

// callerViews hands every caller the whole catalog as its own view, as a
// filtering source does when the caller may see everything.
type callerViews struct{ *published.CatalogSource }

func (s callerViews) View(_ context.Context, snap published.Snapshot, _ *Caller) (published.Snapshot, error) {
	if snap == nil {
		snap = s.Snapshot()
	}
	return snap, nil
}

// TestEncodedPagesPerCallerBounded: encoded skills/list pages are kept per
// caller (whose nextCursor differs even where the skills are the same),
// are the bytes encoding the page gives, and take at most maxPageCache
// bytes however many callers list: past it, pages are encoded on each
// request and still right.
func TestEncodedPagesPerCallerBounded(t *testing.T) {
	dir := t.TempDir()
	desc := strings.Repeat("A long description that fills the entry. ", 24)
	for _, name := range []string{"one", "two", "three", "four"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\nBody\n"
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	_, srv, err := New(nil, callerViews{published.NewCatalogSource(cat)}, &Options{Logger: log, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	declared := func() bool { return true }
	page := func(ctx context.Context, cursor string) []byte {
		t.Helper()
		res, err := srv.listFor(ctx, declared, &wire.ListSkillsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := func(ctx context.Context, cursor string) []byte {
		t.Helper()
		stable, err := srv.listSkills(ctx, &wire.ListSkillsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		ttl := stable.TTLMs
		w := &wire.ListResult{ResultType: stable.ResultType, NextCursor: stable.NextCursor, TTLMs: &ttl, CacheScope: stable.CacheScope}
		for _, e := range stable.Skills {
			w.Skills = append(w.Skills, wire.ListEntry{URI: e.URI, Frontmatter: e.Frontmatter.JSON(), Resources: e.Resources})
		}
		b, _ := marshal(w, false)
		return b
	}
	first := page(context.Background(), "")
	n := maxPageCache/len(first) + 100
	cursors := map[string]bool{}
	for i := range n {
		ctx := ContextWithCaller(context.Background(), &Caller{Subject: fmt.Sprint("user-", i)})
		for range 2 { // the second from the cache, if it was kept
			got := page(ctx, "")
			if w := want(ctx, ""); string(got) != string(w) {
				t.Fatalf("caller %d, first page:\n got %s\nwant %s", i, got, w)
			}
		}
		var res struct{ NextCursor string }
		if err := json.Unmarshal(page(ctx, ""), &res); err != nil || res.NextCursor == "" {
			t.Fatalf("caller %d: no nextCursor (%v)", i, err)
		}
		if cursors[res.NextCursor] {
			t.Fatalf("caller %d got a nextCursor another caller got", i)
		}
		cursors[res.NextCursor] = true
		if got, w := page(ctx, res.NextCursor), want(ctx, res.NextCursor); string(got) != string(w) {
			t.Fatalf("caller %d, second page:\n got %s\nwant %s", i, got, w)
		}
	}
	c := srv.pages.Load()
	if c.size > maxPageCache || c.size == 0 || len(c.m) >= 2*n {
		t.Errorf("%d callers, 2 pages each: %d pages of %d bytes kept; want at most %d bytes", n, len(c.m), c.size, maxPageCache)
	}
}

// TestEncodedFollowSnapshot: after the snapshot changes, skills/get
// entries and skills/list pages are encoded from the new snapshot, not
// served from the old one's cache.
func TestEncodedFollowSnapshot(t *testing.T) {
	uri := "skill://one/SKILL.md"
	for _, c := range []struct {
		method string
		answer func(*Server) (json.Marshaler, error)
	}{
		{"skills/get", func(srv *Server) (json.Marshaler, error) {
			return srv.getAny(context.Background(), &wire.GetParams{URI: &uri})
		}},
		{"skills/list", func(srv *Server) (json.Marshaler, error) {
			return srv.listFor(context.Background(), func() bool { return true }, &wire.ListSkillsParams{})
		}},
		// The superset page a client gets that does not declare the
		// extension (fast_list.go).
		{"skills/list superset", func(srv *Server) (json.Marshaler, error) {
			return srv.listFor(context.Background(), func() bool { return false }, &wire.ListSkillsParams{})
		}},
	} {
		t.Run(c.method, func(t *testing.T) {
			dir := t.TempDir()
			write := func(desc string) {
				if err := os.MkdirAll(filepath.Join(dir, "one"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "one", "SKILL.md"), []byte("---\nname: one\ndescription: "+desc+"\n---\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("first version")
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			src := published.NewCatalogSource(cat)
			_, srv, err := New(nil, src, &Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			answer := func() string {
				res, err := c.answer(srv)
				if err != nil {
					t.Fatal(err)
				}
				b, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			// The second answer comes from the cache.
			if got := answer(); !json.Valid([]byte(got)) || !strings.Contains(got, "first version") || answer() != got {
				t.Fatalf("%s before the change: %s", c.method, got)
			}
			write("second version")
			if _, err := src.Refresh(context.Background(), src.Snapshot()); err != nil {
				t.Fatal(err)
			}
			if got := answer(); !strings.Contains(got, "second version") {
				t.Errorf("%s after the change still serves the old answer: %s", c.method, got)
			}
		})
	}
}

// TestFramePoolBound: a response buffer larger than maxPooledFrame (a big
// file read) is left to the collector, never kept in framePool; smaller
// ones are kept (the control, tried a few times because sync.Pool may
// drop what it is given).
func TestFramePoolBound(t *testing.T) {
	kept := false
	for range 20 {
		small := make([]byte, 0, 64<<10)
		putFrame(&small)
		if b := framePool.Get().(*[]byte); cap(*b) == cap(small) {
			kept = true
			break
		}
	}
	if !kept {
		t.Fatal("a 64 KiB buffer was never kept: the pool cannot be observed")
	}
	for range 20 {
		big := make([]byte, 0, maxPooledFrame+1)
		putFrame(&big)
		if b := framePool.Get().(*[]byte); cap(*b) > maxPooledFrame {
			t.Fatalf("a %d-byte buffer was kept in framePool, whose bound is %d", cap(*b), maxPooledFrame)
		}
	}
}
