package published

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skillport/skillport/catalog"
)

// MergePart is one source of a [MergedSource]; Name identifies it in
// messages (a directory, a git source).
type MergePart struct {
	Name   string
	Source Source
}

// ErrConflict is wrapped when two parts of a [MergedSource] publish the same
// skill path, or one part's skill lies inside another part's skill.
var ErrConflict = errors.New("skill published by two sources")

// MergedSource serves several sources as one: each snapshot is the union
// of the parts' current snapshots, so the server, its profiles, a gateway
// and a host see one catalog. When a part changes, a new merged snapshot
// replaces the old one and OnChange callbacks run, exactly as for a single
// source. It is safe for concurrent use.
type MergedSource struct {
	parts []MergePart
	log   *slog.Logger
	cur   atomic.Pointer[merged]

	reload  sync.Mutex // serialises recomposition
	feed    ChangeFeed
	cancels []func()
}

// Merge composes parts. A skill path published by two parts is an error
// naming both (start-up must fail rather than serve one at random). A
// later change of a part that would cause such a conflict is logged to
// logger (nil: slog.Default()) and the previous merged snapshot stays.
func Merge(parts []MergePart, logger *slog.Logger) (*MergedSource, error) {
	if len(parts) == 0 {
		return nil, errors.New("server: Merge needs at least one source")
	}
	if logger == nil {
		logger = slog.Default()
	}
	m := &MergedSource{parts: slices.Clone(parts), log: logger}
	snaps := make([]Snapshot, len(parts))
	for i, p := range parts {
		snaps[i] = p.Source.Snapshot()
	}
	ms, err := m.compose(snaps)
	if err != nil {
		return nil, err
	}
	m.cur.Store(ms)
	for _, p := range parts {
		m.cancels = append(m.cancels, p.Source.OnChange(func(_, _ Snapshot) { m.recompose() }))
	}
	return m, nil
}

// Close stops following the parts' changes.
func (m *MergedSource) Close() {
	for _, c := range m.cancels {
		c()
	}
}

// Snapshot implements [Source].
func (m *MergedSource) Snapshot() Snapshot { return m.cur.Load().snap }

// Refresh implements [Source]: it refreshes the parts whose files were
// found changed on read (all of them if none was), then recomposes.
func (m *MergedSource) Refresh(ctx context.Context, stale Snapshot) (Snapshot, error) {
	ms := m.cur.Load()
	if ms.snap != stale {
		return ms.snap, nil
	}
	flagged := false
	for i := range ms.parts {
		flagged = flagged || ms.changed[i].Load()
	}
	for i, p := range m.parts {
		if flagged && !ms.changed[i].Load() {
			continue
		}
		if _, err := p.Source.Refresh(ctx, ms.parts[i]); err != nil {
			return nil, fmt.Errorf("server: refreshing %s: %w", p.Name, err)
		}
	}
	if cur := m.recompose(); cur != nil {
		return cur.snap, nil
	}
	return nil, fmt.Errorf("server: the refreshed sources conflict; see the log")
}

// ListSkills implements [Source].
func (m *MergedSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return ListSkills(ctx, m)
}

// ReadFile implements [Source].
func (m *MergedSource) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return ReadFile(ctx, m, f)
}

// OnChange implements [Source].
func (m *MergedSource) OnChange(fn func(old, new Snapshot)) (cancel func()) {
	return m.feed.OnChange(fn)
}

// recompose builds a merged snapshot of the parts' current snapshots and
// installs it; nil when they conflict.
func (m *MergedSource) recompose() *merged {
	m.reload.Lock()
	defer m.reload.Unlock()
	old := m.cur.Load()
	snaps := make([]Snapshot, len(m.parts))
	same := true
	for i, p := range m.parts {
		snaps[i] = p.Source.Snapshot()
		same = same && snaps[i] == old.parts[i]
	}
	if same {
		return old
	}
	ms, err := m.compose(snaps)
	if err != nil {
		m.log.Error("a source changed into a conflict; still serving the previous snapshot", "err", err)
		return nil
	}
	m.cur.Store(ms)
	if ms.id != old.id {
		m.feed.Notify(old.snap, ms.snap)
	}
	return ms
}

func (m *MergedSource) compose(snaps []Snapshot) (*merged, error) {
	owner := map[string]int{} // skill path → part
	var skills []*catalog.Skill
	h := sha256.New()
	for i, s := range snaps {
		h.Write([]byte(s.ID()))
		h.Write([]byte{0})
		for _, sk := range s.Skills() {
			if j, dup := owner[sk.Path]; dup && j != i {
				return nil, fmt.Errorf("server: %w: %q is published by both %s and %s; give one of them a prefix",
					ErrConflict, sk.Path, m.parts[j].Name, m.parts[i].Name)
			}
			owner[sk.Path] = i
			skills = append(skills, sk)
		}
	}
	for _, sk := range skills {
		i := owner[sk.Path]
		for p := sk.Path; strings.Contains(p, "/"); {
			p = p[:strings.LastIndexByte(p, '/')]
			if j, ok := owner[p]; ok && j != i {
				return nil, fmt.Errorf("server: %w: %q from %s lies inside skill %q from %s; give one of them a prefix",
					ErrConflict, sk.Path, m.parts[i].Name, p, m.parts[j].Name)
			}
		}
	}
	ms := &merged{parts: snaps, changed: make([]atomic.Bool, len(snaps)), id: hex.EncodeToString(h.Sum(nil))[:32]}
	ms.snap = NewSnapshot(skills, ms.read, &Known{ID: ms.id, Dynamic: ms.dir})
	return ms, nil
}

// merged is a merged snapshot: [NewSnapshot] of the union of the parts'
// skills, whose ID is derived from the parts' IDs (which they have
// computed already), and the parts it was composed of.
type merged struct {
	snap    Snapshot
	id      string
	parts   []Snapshot
	changed []atomic.Bool // a part's ReadFile reported ErrChanged
}

// dir returns a directory a part lists itself (a dynamic skill's, see
// skillserver.DirectoryReader) that the union of the skills does not derive.
func (s *merged) dir(uri string) *catalog.Dir {
	for _, p := range s.parts {
		if d := p.Dir(uri); d != nil {
			return d
		}
	}
	return nil
}

// read reads f from the part publishing it, and remembers which part
// reported a change, so that Refresh refreshes that one.
func (s *merged) read(ctx context.Context, f *catalog.File) ([]byte, error) {
	for i, p := range s.parts {
		if g := p.File(f.URI); g != nil {
			b, err := p.ReadFile(ctx, g)
			if errors.Is(err, catalog.ErrChanged) {
				s.changed[i].Store(true)
			}
			return b, err
		}
	}
	return nil, fmt.Errorf("server: %s: %w", f.URI, catalog.ErrNotFound)
}
