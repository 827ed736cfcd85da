package install

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAgentsMatchTheDocs: every agent's name, aliases and folders are the
// ones docs/install.md's table shows (and cites), row for row, so the code
// and the citations cannot drift apart.
func TestAgentsMatchTheDocs(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Agent folders")
	if !ok {
		t.Fatal("docs/install.md has no \"### Agent folders\" section")
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") || strings.HasPrefix(line, "| `--agent`") {
			continue
		}
		cells := strings.Split(line, " | ")
		name := strings.SplitN(strings.Trim(cells[0], "| `"), "`", 2)[0]
		rows[name] = cells
	}
	for _, a := range Agents {
		cells, ok := rows[a.Name]
		if !ok {
			t.Errorf("%s: no row in docs/install.md", a.Name)
			continue
		}
		if len(cells) < 5 {
			t.Errorf("%s: row has %d cells", a.Name, len(cells))
			continue
		}
		for _, alias := range a.Aliases {
			if !strings.Contains(cells[0], "`"+alias+"`") {
				t.Errorf("%s: alias %s not in the row %q", a.Name, alias, cells[0])
			}
		}
		if cells[1] != "`"+a.User+"`" || cells[2] != "`"+a.Project+"`" {
			t.Errorf("%s: the docs say user %s, project %s; the code has %s, %s", a.Name, cells[1], cells[2], a.User, a.Project)
		}
		if !strings.Contains(cells[4], "https://") && !strings.Contains(cells[4], "pages above") {
			t.Errorf("%s: no cited source in the row", a.Name)
		}
		delete(rows, a.Name)
	}
	for name := range rows {
		t.Errorf("docs/install.md has a row for %s, which install does not know", name)
	}
}
