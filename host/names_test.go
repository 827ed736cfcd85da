package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQualifySubset: the names Qualify gives a subset of the registry,
// and what Names.Lookup resolves and refuses, are exactly the registry's
// of a host whose origins hold only that subset.
func TestQualifySubset(t *testing.T) {
	hidden := map[string]bool{"docs:acme/support/refunds": true, "tools:pdf": true, "local:pdf": true}
	build := func(all bool) *Host {
		dir := t.TempDir()
		for _, name := range []string{"code-review", "pdf"} {
			if !all && hidden["local:"+name] {
				continue
			}
			os.MkdirAll(filepath.Join(dir, name), 0o755)
			os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(skillMD(name, "Local "+name)), 0o644)
		}
		docs, tools := newFake("docs"), newFake("tools")
		for _, s := range []struct {
			f    *fake
			path string
		}{{docs, "pdf"}, {docs, "acme/billing/refunds"}, {docs, "acme/support/refunds"}, {docs, "code-review"}, {tools, "pdf"}, {tools, "lint"}} {
			if all || !hidden[s.f.name+":"+s.path] {
				s.f.addSkill(s.path, "About "+s.path, nil)
			}
		}
		return connect(t, nil, Origin{Label: "local", Dir: dir}, Origin{Label: "docs", Transport: docs.transport(t)}, Origin{Label: "tools", Transport: tools.transport(t)})
	}
	full, sub := build(true), build(false)
	var seen []*Entry
	for _, e := range full.Skills() {
		if !hidden[e.Origin+":"+e.Path] {
			seen = append(seen, e)
		}
	}
	n := full.Qualify(seen)
	show := func(es []*Entry) string {
		var b strings.Builder
		for _, e := range es {
			fmt.Fprintf(&b, "%s %s %s %s %v\n", e.Origin, e.URI, e.Qualified, e.CLIName(), e.SharedWith)
		}
		return b.String()
	}
	if got, want := show(n.Entries()), show(sub.Skills()); got != want {
		t.Errorf("names of the subset:\n%s\nwant those of a registry of the subset alone:\n%s", got, want)
	}
	if show(full.Skills()) == show(sub.Skills()) {
		t.Fatal("the hidden skills change no name: the test shows nothing")
	}
	for _, name := range []string{"pdf", "local__pdf", "docs__pdf", "tools__pdf", "docs:pdf", "refunds", "billing/refunds",
		"support/refunds", "docs:refunds", "docs__refunds", "acme/billing/refunds", "code-review", "docs__code-review", "lint", "nosuch"} {
		t.Run(name, func(t *testing.T) {
			res := func(e *Entry, err error) string {
				if err != nil {
					return "error: " + err.Error()
				}
				return e.Origin + " " + e.URI + " " + e.Qualified
			}
			if got, want := res(n.Lookup(name)), res(sub.Lookup(name)); got != want {
				t.Errorf("Lookup(%q) = %s, want %s", name, got, want)
			}
		})
	}
}
