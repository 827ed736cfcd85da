package host

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// DefaultSkillDirs are the folders scanned for local skills when none are
// configured, with their labels: the user's ~/.claude/skills ("local"), and
// the project's .claude/skills ("project") and .agents/skills ("agents").
func DefaultSkillDirs() []Origin {
	var out []Origin
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, Origin{Label: "local", Dir: filepath.Join(home, ".claude", "skills"), Display: "~/.claude/skills"})
	}
	out = append(out,
		Origin{Label: "project", Dir: filepath.Join(".claude", "skills"), Display: ".claude/skills"},
		Origin{Label: "agents", Dir: filepath.Join(".agents", "skills"), Display: ".agents/skills"},
	)
	return out
}

// openDir reads a local skill folder with the catalog package. A folder
// that does not exist contributes nothing and is not an error.
func (o *originState) openDir() {
	if _, err := os.Stat(o.cfg.Dir); errors.Is(err, fs.ErrNotExist) {
		return
	}
	cat, err := catalog.OpenDir(o.cfg.Dir, &catalog.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		o.mu.Lock()
		o.status.Err = err
		o.diagLocked(Error, "", err.Error(), err)
		o.mu.Unlock()
		return
	}
	var entries []*Entry
	for _, s := range cat.Skills() {
		files := make([]wire.SkillResource, len(s.Files))
		for i, f := range s.Files {
			files[i] = wire.SkillResource{URI: f.URI, Digest: f.Digest, Size: f.Size}
		}
		entries = append(entries, &Entry{
			Origin:      o.cfg.Label,
			Kind:        KindFilesystem,
			URI:         s.URI,
			Root:        s.Root,
			Path:        s.Path,
			Name:        s.Name,
			Frontmatter: s.Frontmatter,
			Files:       files,
			Size:        s.Size,
			Dir:         filepath.Join(o.cfg.Dir, filepath.FromSlash(s.Dir)),
			local:       s,
			cat:         cat,
		})
	}
	for _, d := range cat.Diagnostics() {
		if d.Severity == skill.Error {
			o.diag(Warning, "", "skipped "+filepath.Join(o.cfg.Dir, d.Path)+": "+d.Message, d.Err)
		}
	}
	o.mu.Lock()
	o.cat = cat
	o.listing = entries
	o.status.Connected = true
	o.status.Skills = len(entries)
	o.mu.Unlock()
}
