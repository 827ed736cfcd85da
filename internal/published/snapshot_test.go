package published_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// TestNewSnapshot checks the maps the one builder derives from a list of
// skills: order, duplicates, nested files, directories, and that only a
// listed file reaches read.
func TestNewSnapshot(t *testing.T) {
	newSkill := func(root string, files map[string][]byte) *catalog.Skill {
		sk, err := catalog.NewSkill(root, files)
		if err != nil {
			t.Fatal(err)
		}
		return sk
	}
	parent := newSkill("skill://team/a", map[string][]byte{
		"SKILL.md": md("a"), "ref.md": []byte("r"), "b/SKILL.md": md("b"),
	})
	child := newSkill("skill://team/a/b", map[string][]byte{"SKILL.md": md("b")})
	other := newSkill("skill://team/c", map[string][]byte{"SKILL.md": md("c")})
	dup := newSkill("skill://team/c", map[string][]byte{"SKILL.md": md("c"), "x.md": []byte("x")})

	var read []string
	snap := published.NewSnapshot([]*catalog.Skill{other, nil, child, parent, dup},
		func(_ context.Context, f *catalog.File) ([]byte, error) {
			read = append(read, f.URI)
			return []byte("ok"), nil
		}, nil)

	var uris []string
	for _, sk := range snap.Skills() {
		uris = append(uris, sk.URI)
	}
	want := []string{"skill://team/a/SKILL.md", "skill://team/a/b/SKILL.md", "skill://team/c/SKILL.md"}
	if !slices.Equal(uris, want) {
		t.Errorf("Skills() = %q, want %q (sorted, nil and the duplicate left out)", uris, want)
	}
	if snap.Skill("skill://team/c/SKILL.md") != other {
		t.Error("Skill(c) is not the first skill listed with that URI")
	}
	var files []string
	for _, f := range snap.Files() {
		files = append(files, f.URI)
	}
	want = []string{"skill://team/a/SKILL.md", "skill://team/a/b/SKILL.md", "skill://team/a/ref.md", "skill://team/c/SKILL.md"}
	if !slices.Equal(files, want) {
		t.Errorf("Files() = %q, want %q (each once, sorted)", files, want)
	}
	if f := snap.File("skill://team/c/x.md"); f != nil {
		t.Error("a file of the left-out duplicate is published")
	}
	if d := snap.Dir("skill://team/a"); d == nil || d.Skill != parent || len(d.Children) != 3 {
		t.Errorf("Dir(skill://team/a) = %+v, want the parent's directory with SKILL.md, b and ref.md", d)
	}
	if d := snap.Dir("skill://team"); d == nil || d.Skill != nil || len(d.Children) != 2 {
		t.Errorf("Dir(skill://team) = %+v, want the prefix level with a and c", d)
	}

	ctx := context.Background()
	if b, err := snap.ReadFile(ctx, snap.File("skill://team/a/ref.md")); err != nil || string(b) != "ok" {
		t.Errorf("ReadFile(listed) = %q, %v", b, err)
	}
	for name, f := range map[string]*catalog.File{
		"nil":                        nil,
		"a file of no skill":         catalog.NewFile("skill://team/z.md", []byte("z")),
		"a copy of a listed file":    func() *catalog.File { c := *snap.File("skill://team/a/ref.md"); return &c }(),
		"a file of a left-out skill": dup.Files[1],
	} {
		if _, err := snap.ReadFile(ctx, f); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if len(read) != 1 {
		t.Errorf("read called for %q, want only the listed file", read)
	}

	again := published.NewSnapshot([]*catalog.Skill{parent, child, other}, nil, nil)
	if again.ID() != snap.ID() {
		t.Error("the same skills listed in another order have another ID")
	}
	if published.NewSnapshot([]*catalog.Skill{parent, child}, nil, nil).ID() == snap.ID() {
		t.Error("a skill fewer leaves the ID unchanged")
	}
}
