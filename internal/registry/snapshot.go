package registry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

const scheme = catalog.DefaultScheme + "://"

// snapshot is the registry's current versions at one generation:
// [published.NewSnapshot] of their skills, metadata only; content is
// read by digest through the source's cache.
//
// It is built from the previous snapshot and the skills changed since: an
// unchanged skill keeps its parsed manifest and digest, and the sorted list
// of skills is merged rather than sorted again, so that a change parses and
// hashes only the changed skills, whatever the registry's size.
type snapshot struct {
	published.Snapshot
	src *Source
	gen int64
	at  time.Time // when the generation was committed

	byPath map[string]*skillIndex
}

// skillIndex is what a snapshot knows of one skill; it never changes once
// built, so snapshots share it.
type skillIndex struct {
	sk     *catalog.Skill
	digest [sha256.Size]byte
}

// ReadFile reads f by digest. Each version's manifest is indexed on its
// own, so a nested skill's files are copies of those its parent lists;
// either is read as the published file of that URI.
func (s *snapshot) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	if f == nil {
		return nil, fmt.Errorf("registry: %w", catalog.ErrNotFound)
	}
	g := s.File(f.URI)
	if g == nil || g.Digest != f.Digest || g.Size != f.Size {
		return nil, fmt.Errorf("registry: %s: %w", f.URI, catalog.ErrNotFound)
	}
	return s.Snapshot.ReadFile(ctx, g)
}

// row is one skill changed since a generation, as loaded from the
// database; a nil manifest means the skill is no longer served.
type row struct {
	path     string
	manifest []byte
	// signature is the version's Sigstore bundle, nil when unsigned.
	signature []byte
	findings  []byte // the version's scan findings, a JSON array; nil when none
	review    string // the version's review state
}

// buildSnapshot applies rows to base (nil for a full load).
func buildSnapshot(src *Source, gen int64, at time.Time, base *snapshot, rows []row) (*snapshot, error) {
	s := &snapshot{src: src, gen: gen, at: at}
	var baseSkills []*catalog.Skill
	if base != nil {
		baseSkills = base.Skills()
	}
	s.byPath = make(map[string]*skillIndex, len(baseSkills)+len(rows))
	if base != nil {
		for p, ix := range base.byPath {
			s.byPath[p] = ix
		}
	}
	var added []*skillIndex
	changed := map[string]bool{}
	for _, r := range rows {
		changed[r.path] = true
		if r.manifest == nil {
			delete(s.byPath, r.path)
			continue
		}
		ix, err := indexSkill(r)
		if err != nil {
			return nil, err
		}
		s.byPath[r.path] = ix
		added = append(added, ix)
	}

	// Skills: the unchanged ones in their order, merged with the new.
	slices.SortFunc(added, func(a, b *skillIndex) int { return cmp.Compare(a.sk.URI, b.sk.URI) })
	kept := make([]*catalog.Skill, 0, len(s.byPath))
	for _, sk := range baseSkills {
		if !changed[sk.Path] {
			kept = append(kept, sk)
		}
	}
	news := make([]*catalog.Skill, len(added))
	for i, ix := range added {
		news[i] = ix.sk
	}
	skills := merge(kept, news, func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) })
	// The ID is a hash of the skills' digests, which the registry keeps
	// anyway.
	h := sha256.New()
	for _, sk := range skills {
		d := s.byPath[sk.Path].digest
		h.Write(d[:])
	}
	s.Snapshot = published.NewSnapshot(skills, src.content, &published.Known{ID: "registry-" + hex.EncodeToString(h.Sum(nil))[:32]})
	return s, nil
}

// merge merges two sorted lists.
func merge[T any](a, b []T, cmp func(x, y T) int) []T {
	if len(b) == 0 {
		return a
	}
	out := make([]T, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if cmp(a[i], b[j]) <= 0 {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// indexSkill parses one version's manifest into a skill and its digest.
func indexSkill(r row) (*skillIndex, error) {
	var m manifest
	if err := json.Unmarshal(r.manifest, &m); err != nil {
		return nil, fmt.Errorf("registry: the manifest of %s: %w", r.path, err)
	}
	sk := &catalog.Skill{URI: scheme + r.path + "/" + catalog.FileNameSKILL, Root: scheme + r.path, Path: r.path, Dir: r.path}
	if err := json.Unmarshal(m.Frontmatter, &sk.Frontmatter); err != nil {
		return nil, fmt.Errorf("registry: the frontmatter of %s: %w", r.path, err)
	}
	sk.Name = sk.Frontmatter.Name()
	sk.Signature = r.signature
	sk.ScanFindings = r.findings
	if r.review == StatePending {
		// Served before review (observe mode): entries say so, and the
		// snapshot changes when a reviewer decides.
		sk.Review = StatePending
	}
	ix := &skillIndex{sk: sk}
	h := sha256.New()
	h.Write([]byte(sk.URI))
	h.Write([]byte{0})
	h.Write(sk.Frontmatter.JSON())
	// A rescan changes what the entry carries: the snapshot's id too.
	h.Write(r.findings)
	h.Write([]byte{0})
	h.Write([]byte(sk.Review))
	for _, mf := range m.Files {
		f := &catalog.File{URI: sk.Root + "/" + mf.Rel, Path: r.path + "/" + mf.Rel, Name: mf.Name, Size: mf.Size, Digest: mf.Digest, MIMEType: mf.MIME, Text: mf.Text}
		sk.Files = append(sk.Files, f)
		sk.Size += f.Size
		h.Write([]byte("\t" + f.URI + "\x00" + f.Digest + strconv.FormatInt(f.Size, 10)))
	}
	h.Sum(ix.digest[:0])
	return ix, nil
}
