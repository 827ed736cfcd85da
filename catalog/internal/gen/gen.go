// Package gen writes synthetic skill trees for benchmarks.
//
// A tree is a function of its [Options] alone: the same skill count, seed and
// scale give the same paths and the same bytes on every machine (only file
// times differ), so figures measured on generated trees are comparable
// between runs and between packages (catalog's benchmarks and the server's
// use the same trees).
//
// The shape imitates real skill collections: most skills sit at the root,
// about a third under organisational prefix directories ("team-07/…"), one
// in twenty holds a nested skill, and each has about five files: a SKILL.md
// with valid frontmatter (name equal to its directory, a description,
// sometimes license and metadata), Markdown references, a script and a data
// file, mostly 200 B to 8 KiB of UTF-8 text. About one skill in twenty-five
// carries a binary asset of 64 KiB to 1 MiB. At the default 10,000 skills
// that is about 50,000 files and 400 MiB.
//
// With [Options.RealWorld] the tree also takes the shapes public collections
// have and the reference trees lack: prefix folders with mixed case and
// punctuation ("Org07--Collection", "ja-JP", "user@col07"), skill folders
// whose name differs from the skill's (aggregators rename them), nested
// metadata (the OpenClaw convention), numbers in metadata, allowed-tools as
// a YAML list, CJK descriptions, JSON-style surrogate escapes, CRLF line
// endings, a byte order mark, hard links and symbolic links inside a skill.
// [Options.Invalid] adds the invalid skills such collections also hold.
package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultSkills is the skill count of the reference benchmark tree.
const DefaultSkills = 10_000

// Version changes whenever the same Options start producing different
// trees; callers that cache generated trees on disk put it in their key.
const Version = 1

// Options describe a tree. The zero value is the default tree: 10,000
// skills, seed 0, scale 1.
type Options struct {
	// Skills is the number of top-level skills; nested skills come on top
	// (about one per twenty). Zero means DefaultSkills. A smaller count gives
	// a proportionally smaller tree with the same mix.
	Skills int
	// Seed selects the tree; different seeds give different names, sizes
	// and bytes with the same statistical shape.
	Seed int64
	// Scale multiplies every file size except SKILL.md's (zero means 1), so
	// the same tree can be written with larger content: Scale 10 has the
	// same paths, files and frontmatter as Scale 1 and ten times the bytes.
	// Keep Skills × Scale reasonable: Skills 1,000 with Scale 10 is about
	// 400 MiB.
	Scale int
	// Workers is how many goroutines write files; zero means GOMAXPROCS.
	Workers int
	// RealWorld adds the shapes of public collections (see the package
	// comment). Skills, files and sizes are drawn as without it; the shapes
	// come from a random stream of their own.
	RealWorld bool
	// Invalid, when positive, makes every Invalid-th top-level skill
	// invalid the ways public collections' skills are, in turn: an
	// unquoted ": " in the description (invalid YAML), a display title as
	// the name, no frontmatter. Its files and nested skill stay; the rest
	// of the tree is the same bytes as without it.
	Invalid int
}

// Stats count what a tree holds.
type Stats struct {
	Skills      int   // skills, nested ones included
	Nested      int   // skills inside another skill's directory
	Prefixed    int   // top-level skills under an organisational prefix directory
	Files       int   // regular files
	Binary      int   // files that are not UTF-8 text
	Bytes       int64 // total size of all files
	SkillMDSize int64 // total size of the SKILL.md files
	// RealWorld shapes
	Renamed   int // skill folders whose name differs from the skill's
	Lenient   int // SKILL.md published with a warning by default, refused with Strict
	Hardlinks int // files with a second hard link in the same skill
	Symlinks  int // symbolic links to a file of the same skill
	Invalid   int // SKILL.md refused even without Strict (Options.Invalid); counted in Skills too
}

// Write writes the tree of skills top-level skills chosen by seed into dir,
// at scale 1. It is Options{Skills: skills, Seed: seed}.Write(dir).
func Write(dir string, skills int, seed int64) (Stats, error) {
	return Options{Skills: skills, Seed: seed}.Write(dir)
}

// Write writes the tree described by o into dir, which must be empty or not
// exist yet. On error, dir may hold part of the tree.
func (o Options) Write(dir string) (Stats, error) {
	if o.Skills < 0 || o.Scale < 0 || o.Workers < 0 || o.Invalid < 0 {
		return Stats{}, errors.New("gen: negative option")
	}
	if o.Skills == 0 {
		o.Skills = DefaultSkills
	}
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, fmt.Errorf("gen: %w", err)
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return Stats{}, fmt.Errorf("gen: %w", err)
	} else if len(ents) > 0 {
		return Stats{}, fmt.Errorf("gen: %s: not empty; generated trees are written into empty directories", dir)
	}

	var (
		next    atomic.Int64
		mu      sync.Mutex
		total   Stats
		firstEr error
		wg      sync.WaitGroup
	)
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &writer{buf: make([]byte, 0, 64<<10)}
			var st Stats
			for {
				i := int(next.Add(1) - 1)
				if i >= o.Skills {
					break
				}
				if err := w.skill(dir, o, i, &st); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					next.Store(int64(o.Skills)) // stop the others
					break
				}
			}
			mu.Lock()
			total.add(st)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstEr != nil {
		return total, firstEr
	}
	return total, nil
}

func (s *Stats) add(o Stats) {
	s.Skills += o.Skills
	s.Nested += o.Nested
	s.Prefixed += o.Prefixed
	s.Files += o.Files
	s.Binary += o.Binary
	s.Bytes += o.Bytes
	s.SkillMDSize += o.SkillMDSize
	s.Renamed += o.Renamed
	s.Lenient += o.Lenient
	s.Hardlinks += o.Hardlinks
	s.Symlinks += o.Symlinks
	s.Invalid += o.Invalid
}

// writer holds one goroutine's scratch buffer.
type writer struct {
	buf []byte
}

// file is one planned file: its path below the skill directory, its size
// and whether it is binary. Sizes are drawn before any content so that
// Scale changes only how many bytes each file gets.
type file struct {
	rel    string
	size   int
	binary bool
}

// skill writes top-level skill i (and its nested skill, if it has one).
// Every random choice comes from generators seeded by (Seed, i), so skills
// can be written in any order, by any number of workers, with the same result.
func (w *writer) skill(root string, o Options, i int, st *Stats) error {
	plan := rand.New(rand.NewPCG(uint64(o.Seed), uint64(i)<<1))
	var cseed [32]byte
	binary.LittleEndian.PutUint64(cseed[0:], uint64(o.Seed))
	binary.LittleEndian.PutUint64(cseed[8:], uint64(i))
	content := rand.New(rand.NewChaCha8(cseed))

	name := fmt.Sprintf("skill-%05d", i)
	var shapes *rand.Rand // nil for the reference tree
	folder := name
	if o.RealWorld {
		shapes = rand.New(rand.NewPCG(uint64(o.Seed), uint64(i)<<1|1))
		if shapes.IntN(6) == 0 {
			folder = "docker-" + name + "-gen"
			st.Renamed++
		}
	}
	dir := folder
	if plan.IntN(10) < 3 {
		team := plan.IntN(32)
		prefix := fmt.Sprintf("team-%02d", team)
		if shapes != nil {
			// Distinct after the first segment is lowercased.
			prefix = []string{"Org%02d--Collection", "ja-JP/team-%02d", "user@col%02d"}[shapes.IntN(3)]
			prefix = fmt.Sprintf(prefix, team)
		}
		dir = prefix + "/" + folder
		st.Prefixed++
	}

	var files []file
	text := func(rel string) {
		files = append(files, file{rel: rel, size: textSize(plan) * o.Scale})
	}
	text("references/guide.md")
	text(scriptNames[plan.IntN(len(scriptNames))])
	if plan.IntN(25) == 0 {
		files = append(files, file{rel: "assets/" + binaryNames[plan.IntN(len(binaryNames))],
			size: (64<<10 + plan.IntN(960<<10)) * o.Scale, binary: true})
	} else {
		text("assets/" + dataNames[plan.IntN(len(dataNames))])
	}
	if plan.IntN(3) == 0 {
		text("references/examples.md")
	}
	if plan.IntN(2) == 0 {
		text("references/api.md")
	}
	nested := ""
	if plan.IntN(20) == 0 {
		nested = fmt.Sprintf("helper-%05d", i)
		text("helpers/" + nested + "/notes.md")
	}

	invalid := -1 // which way this skill is invalid, if it is
	if o.Invalid > 0 && i%o.Invalid == o.Invalid-1 {
		invalid = i / o.Invalid % 3
	}
	if err := w.skillMD(root, dir, name, plan, content, shapes, invalid, st); err != nil {
		return err
	}
	if nested != "" {
		if err := w.skillMD(root, dir+"/helpers/"+nested, nested, plan, content, shapes, -1, st); err != nil {
			return err
		}
		st.Nested++
	}
	for _, f := range files {
		if f.binary {
			w.buf = appendBinary(w.buf[:0], content, f.size)
			st.Binary++
		} else {
			w.buf = appendText(w.buf[:0], content, f.size)
		}
		if err := w.write(root, dir+"/"+f.rel, st); err != nil {
			return err
		}
	}
	if shapes != nil {
		// Links to the skill's guide, which every skill has.
		guide := filepath.Join(root, filepath.FromSlash(dir), "references", "guide.md")
		if shapes.IntN(100) == 0 {
			if err := os.Link(guide, filepath.Join(filepath.Dir(guide), "guide-copy.md")); err != nil {
				return fmt.Errorf("gen: %w", err)
			}
			fi, _ := os.Stat(guide)
			st.Hardlinks++
			st.Files++
			st.Bytes += fi.Size()
		}
		if shapes.IntN(100) == 0 {
			if err := os.Symlink("guide.md", filepath.Join(filepath.Dir(guide), "guide-link.md")); err != nil {
				return fmt.Errorf("gen: %w", err)
			}
			st.Symlinks++
		}
	}
	return nil
}

// skillMD writes a SKILL.md named name; with shapes, in one of the
// real-world shapes; with invalid 0, 1 or 2, made invalid as
// Options.Invalid says.
func (w *writer) skillMD(root, dir, name string, plan, content, shapes *rand.Rand, invalid int, st *Stats) error {
	b := append(w.buf[:0], "---\nname: "...)
	b = append(b, name...)
	b = append(b, "\ndescription: "...)
	switch {
	case shapes != nil && shapes.IntN(8) == 0:
		b = append(b, "日本語の説明：このスキルはデータを変換し、東京のチームが管理します。"...)
	case shapes != nil && shapes.IntN(50) == 0:
		b = append(b, `"\ud83c\udfe6 Banking helper"`...)
	}
	if bytes.HasSuffix(b, []byte("description: ")) {
		b = appendSentence(b, content, 40+plan.IntN(260))
		b = append(b, " Use when the task mentions "...)
		b = append(b, words[content.IntN(len(words))]...)
		b = append(b, '.')
	} else {
		// the same draws, so the rest of the tree does not move
		appendSentence(nil, content, 40+plan.IntN(260))
		content.IntN(len(words))
	}
	b = append(b, '\n')
	if plan.IntN(4) == 0 {
		b = append(b, "license: Apache-2.0\n"...)
	}
	lenient := false
	if plan.IntN(3) == 0 {
		owner, major, minor := plan.IntN(32), plan.IntN(5), plan.IntN(20)
		switch {
		case shapes != nil && shapes.IntN(3) == 0:
			b = fmt.Appendf(b, "metadata: {\"openclaw\": {\"emoji\": \"🔷\", \"owner\": \"team-%02d\", \"requires\": {\"bins\": [\"jq\"]}}}\n", owner)
			lenient = true
		case shapes != nil && shapes.IntN(3) == 0:
			b = fmt.Appendf(b, "metadata:\n  owner: team-%02d\n  eval_cases: %d\n", owner, major+minor)
			lenient = true
		default:
			b = fmt.Appendf(b, "metadata:\n  owner: team-%02d\n  version: \"%d.%d\"\n", owner, major, minor)
		}
	}
	if shapes != nil && shapes.IntN(8) == 0 {
		if shapes.IntN(2) == 0 {
			b = append(b, "allowed-tools: [Read, Write, Edit, Bash]\n"...)
		} else {
			b = append(b, "allowed-tools:\n  - Read\n  - Bash(git:*)\n"...)
		}
		lenient = true
	}
	b = append(b, "---\n\n# "...)
	b = append(b, name...)
	b = append(b, "\n\n"...)
	b = appendText(b, content, textSize(plan))
	switch invalid {
	case 0: // a YAML error: "mapping values are not allowed in this context"
		b = bytes.Replace(b, []byte("\ndescription: "), []byte("\ndescription: Note: "), 1)
	case 1: // an invalid name
		b = bytes.Replace(b, []byte("\nname: "+name+"\n"), []byte("\nname: \"Display Title Of "+name+"\"\n"), 1)
	case 2: // no frontmatter
		b = bytes.Replace(b, []byte("---\n"), []byte("# "), 2)
	}
	if invalid >= 0 {
		st.Invalid++
	}
	if shapes != nil {
		if shapes.IntN(10) == 0 {
			b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
		}
		if shapes.IntN(20) == 0 {
			b = append([]byte("\xef\xbb\xbf"), b...)
		}
		if invalid < 0 && (lenient || path.Base(dir) != name) {
			st.Lenient++
		}
	}
	w.buf = b
	if err := w.write(root, dir+"/SKILL.md", st); err != nil {
		return err
	}
	st.Skills++
	st.SkillMDSize += int64(len(b))
	return nil
}

func (w *writer) write(root, rel string, st *Stats) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	err := os.WriteFile(p, w.buf, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, w.buf, 0o644)
		}
	}
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	st.Files++
	st.Bytes += int64(len(w.buf))
	return nil
}

// textSize draws a text file size, 200 B to 8 KiB.
func textSize(r *rand.Rand) int { return 200 + r.IntN(8<<10-200+1) }

var (
	scriptNames = []string{"scripts/run.py", "scripts/check.sh", "scripts/convert.js", "scripts/report.py"}
	dataNames   = []string{"template.md", "schema.json", "config.yaml", "sample.csv", "prompt.txt"}
	binaryNames = []string{"logo.png", "sample.pdf", "model.bin", "archive.zip"}
	// words include a few non-ASCII ones so that text is UTF-8, not just ASCII.
	words = strings.Fields(`the a skill file table form report invoice customer order refund
		review commit branch merge diff test build deploy release query schema column index
		extract convert validate render summarise translate format check parse encode
		document page field value record batch queue worker cache token request response
		error retry timeout limit budget policy owner team project ticket note draft
		naïve café résumé Straße über déjà-vu 東京 データ`)
)

// appendSentence appends about n bytes of words ending in a full stop.
func appendSentence(b []byte, r *rand.Rand, n int) []byte {
	start := len(b)
	first := true
	for len(b)-start < n {
		if !first {
			b = append(b, ' ')
		}
		w := words[r.IntN(len(words))]
		if first {
			// Capitalise ASCII initials only; the rest stay as written.
			if c := w[0]; c >= 'a' && c <= 'z' {
				b = append(b, c-'a'+'A')
				w = w[1:]
			}
			first = false
		}
		b = append(b, w...)
	}
	return append(b, '.')
}

// appendText appends exactly n bytes of UTF-8 text in short lines.
func appendText(b []byte, r *rand.Rand, n int) []byte {
	end := len(b) + n
	col := 0
	for {
		w := words[r.IntN(len(words))]
		room := end - len(b)
		if room <= len(w)+1 {
			// Pad with ASCII so the size is exact and no rune is cut.
			for range room - 1 {
				b = append(b, '.')
			}
			if room > 0 {
				b = append(b, '\n')
			}
			return b
		}
		if col > 72 {
			b = append(b, '\n')
			col = 0
		} else if col > 0 {
			b = append(b, ' ')
			col++
		}
		b = append(b, w...)
		col += len(w)
	}
}

// appendBinary appends n random bytes.
func appendBinary(b []byte, r *rand.Rand, n int) []byte {
	b = append(b, make([]byte, n)...)
	tail := b[len(b)-n:]
	for i := 0; i+8 <= len(tail); i += 8 {
		binary.LittleEndian.PutUint64(tail[i:], r.Uint64())
	}
	for i := len(tail) &^ 7; i < len(tail); i++ {
		tail[i] = byte(r.Uint32())
	}
	return b
}
