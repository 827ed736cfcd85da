package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
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
	_, srv, err := New(nil, NewCatalogSource(cat), &Options{Logger: log, PageSize: 2})
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
				if res.encoded == nil {
					t.Fatalf("round %d page %d: a declaring client's skills/list was not served from encoded entries", round, page)
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

// TestEncodedEntriesFollowSnapshot: after the snapshot changes, entries are
// encoded from the new snapshot, not served from the old one's cache.
func TestEncodedEntriesFollowSnapshot(t *testing.T) {
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
	src := NewCatalogSource(cat)
	_, srv, err := New(nil, src, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	uri := "skill://one/SKILL.md"
	get := func() string {
		res, err := srv.getAny(context.Background(), &wire.GetParams{URI: &uri})
		if err != nil {
			t.Fatal(err)
		}
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := get(); !json.Valid([]byte(got)) || !strings.Contains(got, "first version") {
		t.Fatalf("skills/get before the change: %s", got)
	}
	write("second version")
	if _, err := src.Refresh(context.Background(), src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if got := get(); !strings.Contains(got, "second version") {
		t.Errorf("skills/get after the change still serves the old entry: %s", got)
	}
}
