package skillserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

func baseFiles() map[string]string {
	return map[string]string{
		"alpha/SKILL.md":                  skillMD("alpha", "Alpha does things"),
		"alpha/references/GUIDE.md":       "# Guide\n",
		"alpha/assets/bin.dat":            "\xff\xfe\x00\x01binary",
		"alpha/empty.txt":                 "",
		"team/beta/SKILL.md":              skillMD("beta", "Beta"),
		"team/beta/nested/gamma/SKILL.md": skillMD("gamma", "Gamma, nested in beta"),
		"delta/SKILL.md":                  skillMD("delta", "Delta"),
		"delta/scripts/run.sh":            "#!/bin/sh\necho delta\n",
	}
}

type readResult struct {
	ResultType string `json:"resultType"`
	Contents   []struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"contents"`
	TTLMs      *int64 `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

func (r readResult) bytes(t testing.TB) []byte {
	t.Helper()
	if len(r.Contents) != 1 {
		t.Fatalf("%d content items, want exactly 1", len(r.Contents))
	}
	c := r.Contents[0]
	switch {
	case c.Text != nil && c.Blob == nil:
		return []byte(*c.Text)
	case c.Blob != nil && c.Text == nil:
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("content has text=%v blob=%v, want exactly one", c.Text != nil, c.Blob != nil)
	return nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestCapabilitiesAndInstructions(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		c := connectRaw(t, f.MCP, version)
		var init struct {
			Capabilities struct {
				Resources  *struct{ ListChanged, Subscribe bool } `json:"resources"`
				Extensions map[string]json.RawMessage             `json:"extensions"`
			} `json:"capabilities"`
			Instructions string `json:"instructions"`
		}
		if err := json.Unmarshal(c.init, &init); err != nil {
			t.Fatal(err)
		}
		if got := string(init.Capabilities.Extensions[wire.ExtensionID]); got != `{"directoryRead":true}` {
			t.Errorf("%s: extension settings %s, want {\"directoryRead\":true}", version, got)
		}
		if r := init.Capabilities.Resources; r == nil || !r.ListChanged || !r.Subscribe {
			t.Errorf("%s: resources capability %+v, want listChanged and subscribe", version, r)
		}
		if !strings.Contains(init.Instructions, "serves 4 Agent skills") || !strings.Contains(init.Instructions, "team/beta/nested/gamma") {
			t.Errorf("%s: instructions %q do not name what is served", version, init.Instructions)
		}
	}
}

// listAll pages through skills/list and returns every entry and page.
func listAll(t *testing.T, c *rawClient) ([]wire.Skill, int) {
	t.Helper()
	var all []wire.Skill
	cursor := ""
	for pages := 1; ; pages++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res := get[wire.ListSkillsResult](c, "skills/list", params)
		if res.ResultType != "complete" || res.CacheScope != "public" {
			t.Fatalf("page %d: resultType %q cacheScope %q", pages, res.ResultType, res.CacheScope)
		}
		all = append(all, res.Skills...)
		if res.NextCursor == "" {
			return all, pages
		}
		if pages > 100 {
			t.Fatal("skills/list does not terminate")
		}
		cursor = res.NextCursor
	}
}

func TestListSkillsPaging(t *testing.T) {
	for _, size := range []int{1, 2, 3, 100} {
		f := newFixture(t, baseFiles(), &skillserver.Options{PageSize: size, TTL: 90 * time.Second})
		c := connectRaw(t, f.MCP, "")
		all, pages := listAll(t, c)
		cat := f.Src.Catalog()
		if want := (len(cat.Skills()) + size - 1) / size; pages != want {
			t.Errorf("page size %d: %d pages, want %d", size, pages, want)
		}
		if len(all) != len(cat.Skills()) {
			t.Fatalf("page size %d: %d entries, want %d", size, len(all), len(cat.Skills()))
		}
		for i, e := range all {
			sk := cat.Skills()[i]
			if e.URI != sk.URI || !e.Frontmatter.Equal(sk.Frontmatter) || e.Resources == nil || len(e.Resources.Files) != len(sk.Files) {
				t.Errorf("entry %d = %s, want %s with %d files", i, e.URI, sk.URI, len(sk.Files))
			}
		}
		_, _, raw := c.call("skills/list", map[string]any{})
		if !bytes.Contains(raw, []byte(`"ttlMs":90000`)) {
			t.Errorf("skills/list lacks ttlMs 90000: %s", raw)
		}
	}
}

func TestCursorErrors(t *testing.T) {
	f := newFixture(t, baseFiles(), &skillserver.Options{PageSize: 1, TTL: -1})
	c := connectRaw(t, f.MCP, "")
	first := get[wire.ListSkillsResult](c, "skills/list", map[string]any{})
	dirPage := get[wire.ReadDirectoryResult](c, "resources/directory/read", map[string]any{"uri": "skill://alpha"})
	forged := []byte(first.NextCursor)
	forged[len(forged)-3] ^= 1
	cases := map[string]struct {
		method string
		params map[string]any
	}{
		"forged":                   {"skills/list", map[string]any{"cursor": string(forged)}},
		"garbage":                  {"skills/list", map[string]any{"cursor": "abc"}},
		"huge":                     {"skills/list", map[string]any{"cursor": "sp1." + strings.Repeat("A", 1<<20)}},
		"another list's cursor":    {"skills/list", map[string]any{"cursor": dirPage.NextCursor}},
		"another directory":        {"resources/directory/read", map[string]any{"uri": "skill://delta", "cursor": dirPage.NextCursor}},
		"skills cursor on files":   {"resources/list", map[string]any{"cursor": first.NextCursor}},
		"garbage on files":         {"resources/list", map[string]any{"cursor": "%%%"}},
		"garbage on a directory":   {"resources/directory/read", map[string]any{"uri": "skill://alpha", "cursor": "x"}},
		"number instead of string": {"skills/list", map[string]any{"cursor": 12}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, rerr, raw := c.call(tc.method, tc.params)
			if rerr == nil || rerr.Code != -32602 {
				t.Fatalf("got %s, want -32602", raw)
			}
			if len(raw) > 4096 {
				t.Errorf("error response is %d bytes: a huge cursor must not be echoed", len(raw))
			}
		})
	}
}

// TestStaleCursorAfterReload pages through listings while the catalog
// changes: each cursor of the old snapshot (skills/list, resources/list and
// a directory read) is refused with -32602 saying the catalog changed and
// to list again from the start, and listing again shows the new catalog.
func TestStaleCursorAfterReload(t *testing.T) {
	f := newFixture(t, baseFiles(), &skillserver.Options{PageSize: 1, TTL: -1})
	c := connectRaw(t, f.MCP, "")
	p1 := get[wire.ListSkillsResult](c, "skills/list", map[string]any{})
	if p1.Skills[0].URI != "skill://alpha/SKILL.md" || p1.NextCursor == "" {
		t.Fatalf("first page %+v", p1)
	}
	r1 := get[mcp.ListResourcesResult](c, "resources/list", map[string]any{})
	d1 := get[wire.ReadDirectoryResult](c, wire.MethodReadDirectory, map[string]any{"uri": "skill://alpha"})
	if r1.NextCursor == "" || d1.NextCursor == "" {
		t.Fatalf("resources/list or directory read has a single page: %q %q", r1.NextCursor, d1.NextCursor)
	}
	// Under the same snapshot the cursors page on.
	if p := get[wire.ListSkillsResult](c, "skills/list", map[string]any{"cursor": p1.NextCursor}); len(p.Skills) != 1 {
		t.Fatalf("second page before the reload: %+v", p)
	}
	writeTree(t, f.Dir, map[string]string{
		"aaa/SKILL.md":         skillMD("aaa", "sorts before the cursor"),
		"delta/scripts/run.sh": "#!/bin/sh\necho changed\n",
	})
	f.reload(t)
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"skills/list", map[string]any{"cursor": p1.NextCursor}},
		{"resources/list", map[string]any{"cursor": r1.NextCursor}},
		{wire.MethodReadDirectory, map[string]any{"uri": "skill://alpha", "cursor": d1.NextCursor}},
	} {
		_, rerr, raw := c.call(tc.method, tc.params)
		if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "catalog changed") || !strings.Contains(rerr.Message, "list again from the start") {
			t.Errorf("%s with a cursor of the old catalog: %s, want -32602 saying the catalog changed", tc.method, raw)
		}
	}
	seen, _ := listAll(t, c)
	var uris []string
	for _, e := range seen {
		uris = append(uris, e.URI)
	}
	if !slices.Contains(uris, "skill://aaa/SKILL.md") {
		t.Errorf("listing again from the start: %v, want the new skill aaa", uris)
	}
}

func TestGetSkill(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	c := connectRaw(t, f.MCP, "2026-07-28")
	list, _ := listAll(t, c)
	for _, e := range list {
		res := get[wire.GetSkillResult](c, "skills/get", map[string]any{"uri": e.URI})
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(res.Skill)
		if !bytes.Equal(a, b) {
			t.Errorf("skills/get %s = %s, want the listing entry %s", e.URI, b, a)
		}
		if res.ResultType != "complete" || res.CacheScope == "" {
			t.Errorf("skills/get %s: resultType %q cacheScope %q", e.URI, res.ResultType, res.CacheScope)
		}
	}
	// The nested skill's files are part of the enclosing skill's manifest.
	beta := get[wire.GetSkillResult](c, "skills/get", map[string]any{"uri": "skill://team/beta/SKILL.md"})
	if !slices.ContainsFunc(beta.Skill.Resources.Files, func(r wire.SkillResource) bool { return r.URI == "skill://team/beta/nested/gamma/SKILL.md" }) {
		t.Errorf("beta's manifest lacks its nested skill's SKILL.md")
	}

	for uri, wantMsg := range map[string]string{
		"skill://alpha/references/GUIDE.md": "it is a file",
		"skill://alpha":                     "call skills/get with skill://alpha/SKILL.md",
		"skill://team":                      "directory resource",
		"skill://alpha/SKILL.md/":           "trailing slash",
		"skill://nope/SKILL.md":             "No skill is served at skill://nope/SKILL.md",
		"":                                  "missing or empty",
	} {
		_, rerr, raw := c.call("skills/get", map[string]any{"uri": uri})
		if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, wantMsg) {
			t.Errorf("skills/get %q: %s, want -32602 mentioning %q", uri, raw, wantMsg)
		}
	}
	if _, rerr, raw := c.call("skills/get", map[string]any{"uri": 7}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("skills/get with a numeric uri: %s, want -32602", raw)
	}
}

func TestReadResource(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		c := connectRaw(t, f.MCP, version)
		cat := f.Src.Catalog()
		for _, sk := range cat.Skills() {
			for _, file := range sk.Files {
				_, _, raw := c.call("resources/read", map[string]any{"uri": file.URI})
				res := get[readResult](c, "resources/read", map[string]any{"uri": file.URI})
				got := res.bytes(t)
				if int64(len(got)) != file.Size || digest(got) != file.Digest {
					t.Errorf("%s: served %d bytes %s, published %d %s", file.URI, len(got), digest(got), file.Size, file.Digest)
				}
				ct := res.Contents[0]
				if ct.URI != file.URI || ct.MIMEType != file.MIMEType {
					t.Errorf("%s: content uri %s mimeType %s, want %s", file.URI, ct.URI, ct.MIMEType, file.MIMEType)
				}
				if wantText := file.Text && file.Size > 0; (ct.Text != nil) != wantText {
					t.Errorf("%s: sent as text=%v, want %v", file.URI, ct.Text != nil, wantText)
				}
				if res.ResultType != "complete" || res.TTLMs == nil || res.CacheScope != "public" {
					t.Errorf("%s: %s lacks resultType/ttlMs/cacheScope", file.URI, raw)
				}
			}
		}
		// A directory is not readable as a file.
		_, rerr, raw := c.call("resources/read", map[string]any{"uri": "skill://alpha/references"})
		if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "resources/directory/read") {
			t.Errorf("reading a directory: %s, want -32602 pointing to resources/directory/read", raw)
		}
	}
}

func TestDirectoryRead(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	type entry = wire.DirectoryEntry
	read := func(uri string) []entry {
		return get[wire.ReadDirectoryResult](c, "resources/directory/read", map[string]any{"uri": uri}).Resources
	}
	names := func(es []entry) (out []string) {
		for _, e := range es {
			out = append(out, e.Name+"|"+e.MIMEType)
		}
		return out
	}
	cases := map[string][]string{
		"skill://alpha":                  {"alpha|text/markdown", "assets|inode/directory", "empty.txt|text/plain", "references|inode/directory"},
		"skill://alpha/references":       {"GUIDE.md|text/markdown"},
		"skill://team":                   {"beta|inode/directory"},
		"skill://team/beta":              {"beta|text/markdown", "nested|inode/directory"},
		"skill://team/beta/nested":       {"gamma|inode/directory"},
		"skill://team/beta/nested/gamma": {"gamma|text/markdown"},
	}
	for uri, want := range cases {
		got := read(uri)
		if !slices.Equal(names(got), want) {
			t.Errorf("%s: %v, want %v", uri, names(got), want)
		}
		for _, e := range got {
			if strings.HasSuffix(e.URI, "/") || !strings.HasPrefix(e.URI, uri+"/") || strings.Contains(e.URI[len(uri)+1:], "/") {
				t.Errorf("%s: child %s is not a direct child without trailing slash", uri, e.URI)
			}
		}
	}
	root := read("skill://alpha")
	if root[0].URI != "skill://alpha/SKILL.md" || root[0].Description != "Alpha does things" || root[0].Size == nil {
		t.Errorf("SKILL.md child %+v: want name and description from the frontmatter and a size", root[0])
	}
	for uri, wantMsg := range map[string]string{
		"skill://alpha/SKILL.md":    "is not a directory resource: it is a file",
		"skill://alpha/":            "trailing slash",
		"skill://alpha/nope":        "No directory is served at skill://alpha/nope",
		"skill://alpha/../delta":    "dot segment",
		"skill://alpha/references/": "trailing slash",
	} {
		_, rerr, raw := c.call("resources/directory/read", map[string]any{"uri": uri})
		if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, wantMsg) {
			t.Errorf("directory read %q: %s, want -32602 mentioning %q", uri, raw, wantMsg)
		}
	}

	// Paging a directory one child at a time gives the same children.
	g := newFixture(t, baseFiles(), &skillserver.Options{PageSize: 1, TTL: -1})
	gc := connectRaw(t, g.MCP, "")
	var paged []string
	cursor := ""
	for {
		p := map[string]any{"uri": "skill://alpha"}
		if cursor != "" {
			p["cursor"] = cursor
		}
		res := get[wire.ReadDirectoryResult](gc, "resources/directory/read", p)
		if len(res.Resources) > 1 {
			t.Fatalf("page of %d children with page size 1", len(res.Resources))
		}
		paged = append(paged, names(res.Resources)...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(paged, cases["skill://alpha"]) {
		t.Errorf("paged children %v, want %v", paged, cases["skill://alpha"])
	}
}

func TestResourcesList(t *testing.T) {
	f := newFixture(t, baseFiles(), &skillserver.Options{PageSize: 3, TTL: -1, Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}})
	c := connectRaw(t, f.MCP, "")
	var all []mcp.Resource
	cursor := ""
	for {
		p := map[string]any{}
		if cursor != "" {
			p["cursor"] = cursor
		}
		res := get[mcp.ListResourcesResult](c, "resources/list", p)
		all = append(all, derefAll(res.Resources)...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	files := f.Src.Snapshot().Files()
	if len(all) != len(files) {
		t.Fatalf("resources/list gave %d resources, want %d", len(all), len(files))
	}
	for i, r := range all {
		if r.URI != files[i].URI || r.MIMEType != files[i].MIMEType || r.Size != files[i].Size {
			t.Errorf("resource %d: %+v, want %s", i, r, files[i].URI)
		}
		if sk := f.Src.Snapshot().Skill(r.URI); sk != nil {
			if r.Name != sk.Name || r.Description != sk.Frontmatter.Description() || r.Annotations == nil || r.Annotations.Priority != 0.8 {
				t.Errorf("SKILL.md resource %s: name %q description %q annotations %+v", r.URI, r.Name, r.Description, r.Annotations)
			}
		}
	}
	tl := get[mcp.ListResourceTemplatesResult](c, "resources/templates/list", map[string]any{})
	if len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "skill://{+path}" {
		t.Errorf("resources/templates/list: %+v", tl.ResourceTemplates)
	}
}

func derefAll(rs []*mcp.Resource) []mcp.Resource {
	out := make([]mcp.Resource, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out
}

// TestDeletedFile reads a file deleted after the snapshot was built.
func TestDeletedFile(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	uri := "skill://alpha/references/GUIDE.md"
	if err := os.Remove(filepath.Join(f.Dir, "alpha", "references", "GUIDE.md")); err != nil {
		t.Fatal(err)
	}
	_, rerr, raw := c.call("resources/read", map[string]any{"uri": uri})
	if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "removed") || !strings.Contains(rerr.Message, uri) {
		t.Fatalf("reading a deleted file: %s, want -32602 saying it was removed", raw)
	}
	sk := get[wire.GetSkillResult](c, "skills/get", map[string]any{"uri": "skill://alpha/SKILL.md"})
	if slices.ContainsFunc(sk.Skill.Resources.Files, func(r wire.SkillResource) bool { return r.URI == uri }) {
		t.Errorf("after the failed read the manifest still lists %s", uri)
	}
}

// TestChangingFileNeverTorn rewrites a file continuously while clients read
// it. Replaced atomically (rename), every successful read returns one
// complete version; rewritten in place (truncate, then write), every read
// returns a state the file really passed through, a prefix of one version,
// never a mix of two. Either way the bytes are those the serving snapshot
// digested (catalog.ReadFile refuses anything else).
func TestChangingFileNeverTorn(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		name := "rename"
		if inPlace {
			name = "in-place"
		}
		t.Run(name, func(t *testing.T) { changingFile(t, inPlace) })
	}
}

func changingFile(t *testing.T, inPlace bool) {
	versions := []string{strings.Repeat("A", 64<<10), strings.Repeat("B", 32<<10) + "\n", strings.Repeat("C", 96<<10)}
	files := baseFiles()
	files["alpha/references/GUIDE.md"] = versions[0]
	f := newFixture(t, files, nil)
	path := filepath.Join(f.Dir, "alpha", "references", "GUIDE.md")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ctx.Err() == nil; i++ {
			data := []byte(versions[i%len(versions)])
			if inPlace {
				os.WriteFile(path, data, 0o644)
				continue
			}
			tmp := filepath.Join(f.Root, "guide.tmp")
			os.WriteFile(tmp, data, 0o644)
			os.Rename(tmp, path)
		}
	}()
	acceptable := func(got string) bool {
		if !inPlace {
			return slices.Contains(versions, got)
		}
		for _, v := range versions {
			if strings.HasPrefix(v, got) {
				return true
			}
		}
		return false
	}
	var ok, changing atomic.Int64
	for range 4 {
		c := connectRaw(t, f.MCP, "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, rerr, raw := c.call("resources/read", map[string]any{"uri": "skill://alpha/references/GUIDE.md"})
				if rerr != nil {
					if rerr.Code != -32603 && rerr.Code != -32602 {
						t.Errorf("unexpected error %s", raw)
					}
					changing.Add(1)
					continue
				}
				var r readResult
				json.Unmarshal(res, &r)
				if got := r.bytes(t); !acceptable(string(got)) {
					t.Errorf("served %d bytes that the file never held", len(got))
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d reads served, %d refused while the file was changing", ok.Load(), changing.Load())
	if ok.Load() == 0 {
		t.Errorf("no read succeeded")
	}
}

func TestNotifications(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	uri := "skill://alpha/references/GUIDE.md"
	if _, rerr, raw := c.call("resources/subscribe", map[string]any{"uri": uri}); rerr != nil {
		t.Fatalf("subscribe: %s", raw)
	}
	if _, rerr, raw := c.call("resources/subscribe", map[string]any{"uri": "skill://alpha/../x"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("subscribing to a URI that is not served: %s, want -32602", raw)
	}
	writeTree(t, f.Dir, map[string]string{"alpha/references/GUIDE.md": "# Guide, v2\n"})
	f.reload(t)
	c.waitNote("notifications/resources/list_changed", 5*time.Second)
	n := c.waitNote("notifications/resources/updated", 5*time.Second)
	if !bytes.Contains(n, []byte(uri)) {
		t.Errorf("resources/updated for the wrong URI: %s", n)
	}
	// A change to an unsubscribed file sends list_changed only.
	if _, rerr, raw := c.call("resources/unsubscribe", map[string]any{"uri": uri}); rerr != nil {
		t.Fatalf("unsubscribe: %s", raw)
	}
	writeTree(t, f.Dir, map[string]string{"alpha/references/GUIDE.md": "# Guide, v3\n"})
	f.reload(t)
	c.waitNote("notifications/resources/list_changed", 5*time.Second)
	c.call("ping", nil)
	for _, n := range c.notes {
		if bytes.Contains(n, []byte("resources/updated")) {
			t.Errorf("resources/updated after unsubscribing: %s", n)
		}
	}
}

// TestAttachAlongside attaches skills to a server that has its own
// resources and instructions.
func TestAttachAlongside(t *testing.T) {
	dir := writeTree(t, t.TempDir(), baseFiles())
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "app"}, &mcp.ServerOptions{Instructions: "The app's own instructions.", PageSize: 1})
	s.AddResource(&mcp.Resource{URI: "app://readme", Name: "readme", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "app://readme", Text: "hello"}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "app://second", Name: "second"}, nil)
	if _, err := skillserver.Attach(s, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard, Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}}); err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, s, "")
	var init struct {
		Instructions string `json:"instructions"`
	}
	json.Unmarshal(c.init, &init)
	if !strings.HasPrefix(init.Instructions, "The app's own instructions.\n\n") || !strings.Contains(init.Instructions, "4 Agent skills") {
		t.Errorf("instructions %q", init.Instructions)
	}
	var uris []string
	cursor := ""
	for {
		p := map[string]any{}
		if cursor != "" {
			p["cursor"] = cursor
		}
		res := get[mcp.ListResourcesResult](c, "resources/list", p)
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(uris) != 2+8 || uris[0] != "app://readme" || uris[1] != "app://second" {
		t.Errorf("resources/list: %v", uris)
	}
	own := get[readResult](c, "resources/read", map[string]any{"uri": "app://readme"})
	if string(own.bytes(t)) != "hello" {
		t.Errorf("the app's own resource is no longer readable")
	}
	if _, rerr, raw := c.call("resources/read", map[string]any{"uri": "app://nope"}); rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "app://nope") {
		t.Errorf("unknown app resource: %s", raw)
	}
	get[readResult](c, "resources/read", map[string]any{"uri": "skill://alpha/SKILL.md"})
}
