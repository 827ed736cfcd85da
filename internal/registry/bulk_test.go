package registry_test

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
)

// bulkTree is a tree of skills named prefix0000.. by index, each one file;
// rev changes the content of the skills below changedBelow.
func bulkTree(prefix string, from, to, changedBelow, rev int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := from; i < to; i++ {
		name := fmt.Sprintf("%s%04d", prefix, i)
		r := 0
		if i < changedBelow {
			r = rev
		}
		fsys[name+"/SKILL.md"] = &fstest.MapFile{Data: fmt.Appendf(nil, "---\nname: %s\ndescription: Skill %d, revision %d.\n---\n", name, i, r)}
	}
	return fsys
}

// TestPublishBulkMetadata publishes more than 1,000 new versions at once
// (versions, events and new skills are then copied, not sent as
// parameters), across three namespaces of which the middle one has no
// change, with skills changed and removed in the same publish: every
// version, skill, event and generation is recorded as a small publish
// records them, and a replica serves the result.
func TestPublishBulkMetadata(t *testing.T) {
	ctx := context.Background()
	dsn := newDB(t)
	conn := connect(t, dsn)
	open := func(fsys fstest.MapFS, prefix string) *catalog.Catalog {
		c, err := catalog.Open(fsys, &catalog.Options{Prefix: prefix, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pub := func(commit string, a, b, c fstest.MapFS) []*registry.PublishResult {
		res, err := registry.PublishParts(ctx, conn, []registry.Part{
			{Name: "a", Catalog: open(a, "a"), Commit: commit},
			{Name: "b", Catalog: open(b, "b"), Commit: commit},
			{Name: "c", Catalog: open(c, "c"), Commit: commit},
		}, &registry.PublishOptions{Publisher: "bulk"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// First: 600 + 5 + 600 new skills.
	first := pub("c1", bulkTree("a", 0, 600, 0, 0), bulkTree("b", 0, 5, 0, 0), bulkTree("c", 0, 600, 0, 0))
	if n := len(first[0].Added) + len(first[1].Added) + len(first[2].Added); n != 1205 {
		t.Fatalf("first publish added %d skills, want 1205", n)
	}
	// Then in a: a0000-a0099 removed, a0100-a0199 changed, a0600-a1049
	// added; b unchanged; c: 600 added.
	a2, b2, c2 := bulkTree("a", 100, 1050, 200, 1), bulkTree("b", 0, 5, 0, 0), bulkTree("c", 0, 1200, 0, 0)
	res := pub("c2", a2, b2, c2)
	for i, want := range [][4]int{{450, 100, 100, 400}, {0, 0, 0, 5}, {600, 0, 0, 600}} {
		r := res[i]
		if got := [4]int{len(r.Added), len(r.Changed), len(r.Removed), r.Unchanged}; got != want {
			t.Errorf("%s: added, changed, removed, unchanged = %v, want %v", r.Namespace, got, want)
		}
		if r.Generation != first[0].Generation+1 {
			t.Errorf("%s: generation %d, want %d", r.Namespace, r.Generation, first[0].Generation+1)
		}
	}
	// The skills rows: current version, digest checked by the set checks,
	// and the generation a replica re-reads from.
	var live, atGen int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE current IS NOT NULL), count(*) FILTER (WHERE generation = $1) FROM skills`, res[0].Generation).Scan(&live, &atGen); err != nil {
		t.Fatal(err)
	}
	if live != 950+5+1200 || atGen != 100+100+450+600 {
		t.Errorf("skills: %d current, %d at the new generation; want %d and %d", live, atGen, 950+5+1200, 100+100+450+600)
	}
	for _, tc := range []struct {
		path     string
		actions  []string
		versions []int
		details  []string
	}{
		{"a/a0000", []string{"publish", "remove"}, []int{1, 1}, []string{"added c1", "missing from the published tree"}},
		{"a/a0150", []string{"publish", "publish"}, []int{1, 2}, []string{"added c1", "changed c2"}},
		{"a/a1049", []string{"publish"}, []int{1}, []string{"added c2"}},
		{"c/c1199", []string{"publish"}, []int{1}, []string{"added c2"}},
		{"b/b0001", []string{"publish"}, []int{1}, []string{"added c1"}},
	} {
		evs, err := registry.Events(ctx, conn, tc.path, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(tc.actions) {
			t.Errorf("%s: %d events %+v, want %v", tc.path, len(evs), evs, tc.actions)
			continue
		}
		for i, e := range evs {
			if e.Action != tc.actions[i] || e.Detail != tc.details[i] || e.Who != "bulk" || e.Version != tc.versions[i] {
				t.Errorf("%s event %d: %+v, want %s of version %d %q by bulk", tc.path, i, e, tc.actions[i], tc.versions[i], tc.details[i])
			}
		}
	}
	vs, err := registry.Versions(ctx, conn, "a/a0150")
	if err != nil || len(vs) != 2 || vs[1].Version != 2 {
		t.Errorf("versions of a/a0150: %+v %v, want 1 and 2", vs, err)
	}
	// A replica serves the three namespaces as one tree would.
	all := fstest.MapFS{}
	for prefix, fsys := range map[string]fstest.MapFS{"a": a2, "b": b2, "c": c2} {
		for name, f := range fsys {
			all[prefix+"/"+name] = f
		}
	}
	sameContent(t, open(all, ""), openReplica(t, dsn).Snapshot())
}
