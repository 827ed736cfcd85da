package gitsource

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/skillport/skillport/internal/gittest"
)

// deltaRepo makes a repository whose files change a little in each of
// many commits, so that git packs them as chains of deltas, and returns
// its work tree.
func deltaRepo(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q", "-b", "main")
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line %d of a file that changes a little in each commit", i))
	}
	for c := range 30 {
		lines[(c*7)%len(lines)] = fmt.Sprintf("changed in commit %d", c)
		for _, name := range []string{"a/SKILL.md", "a/notes.txt", fmt.Sprintf("b%d/x.txt", c%3)} {
			p := filepath.Join(work, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(name+"\n"+strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gittest.Run(t, work, "add", "-A")
		gittest.Run(t, work, "commit", "-q", "-m", strconv.Itoa(c))
	}
	return work
}

// packAll writes every object of work's history into one pack under
// gitDir/objects/pack with git pack-objects, with offset deltas or, if
// refDeltas, deltas naming their base by id.
func packAll(t *testing.T, work, gitDir string, refDeltas bool) {
	t.Helper()
	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	list := gitOut(t, work, nil, "rev-list", "--objects", "--all")
	args := []string{"pack-objects", "-q", "--window=50", "--depth=40"}
	if !refDeltas {
		args = append(args, "--delta-base-offset")
	}
	gitOut(t, work, strings.NewReader(list), append(args, filepath.Join(dir, "pack"))...)
}

func gitOut(t *testing.T, dir string, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, gittest.Env(dir), stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v (the git binary is needed: apt-get install git): %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// gitObject is an object as git cat-file gives it.
type gitObject struct {
	typ  string
	data []byte
}

// eachPack runs fn on a pack of every object of deltaRepo's history
// written by git, once with offset deltas and once with reference deltas,
// with those objects as git gives them.
func eachPack(t *testing.T, fn func(t *testing.T, gitDir string, refDeltas bool, want map[plumbing.Hash]gitObject)) {
	work := deltaRepo(t)
	want := catAll(t, work)
	for _, refDeltas := range []bool{false, true} {
		t.Run(fmt.Sprintf("refDeltas=%v", refDeltas), func(t *testing.T) {
			gitDir := t.TempDir()
			packAll(t, work, gitDir, refDeltas)
			fn(t, gitDir, refDeltas, want)
		})
	}
}

// catAll returns every object of work's history as git cat-file gives it.
func catAll(t *testing.T, work string) map[plumbing.Hash]gitObject {
	t.Helper()
	var ids strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(gitOut(t, work, nil, "rev-list", "--objects", "--all")), "\n") {
		ids.WriteString(strings.Fields(line)[0] + "\n")
	}
	out := gitOut(t, work, strings.NewReader(ids.String()), "cat-file", "--batch")
	br := bufio.NewReader(strings.NewReader(out))
	m := map[plumbing.Hash]gitObject{}
	for {
		hdr, err := br.ReadString('\n')
		if err == io.EOF {
			return m
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		m[plumbing.NewHash(f[0])] = gitObject{f[1], data[:n]}
	}
}

// TestPackReader reads every object of packs that git wrote with offset
// and with reference deltas, and compares them with what git gives:
// content, type and size, including through chains of deltas and the
// cache of their bases.
func TestPackReader(t *testing.T) {
	eachPack(t, func(t *testing.T, gitDir string, refDeltas bool, want map[plumbing.Hash]gitObject) {
		r := newPackReader(gitDir)
		defer r.close()
		r.refresh()
		if len(r.packs) != 1 {
			t.Fatalf("%d packs loaded, want 1", len(r.packs))
		}
		deltas := 0
		for h, w := range want {
			p, off, ok := r.find(h)
			if !ok {
				t.Fatalf("%s not found", h)
			}
			hd, err := p.header(off)
			if err != nil {
				t.Fatal(err)
			}
			if hd.typ == plumbing.OFSDeltaObject && !refDeltas || hd.typ == plumbing.REFDeltaObject && refDeltas {
				deltas++
			}
			typ, data, err := r.object(h)
			if err != nil {
				t.Fatalf("%s: %v", h, err)
			}
			if typ.String() != w.typ || !bytes.Equal(data, w.data) {
				t.Fatalf("%s: read a %s of %d bytes, git has a %s of %d bytes", h, typ, len(data), w.typ, len(w.data))
			}
			typ, size, err := r.size(h)
			if err != nil || typ.String() != w.typ || size != int64(len(w.data)) {
				t.Fatalf("%s: size %s %d %v, git has a %s of %d bytes", h, typ, size, err, w.typ, len(w.data))
			}
		}
		if deltas < len(want)/4 {
			t.Fatalf("only %d of %d objects are deltas of the wanted kind: the test packs nothing worth reading", deltas, len(want))
		}
		if _, _, err := r.object(plumbing.NewHash(strings.Repeat("ab", 20))); err != errSlowPath {
			t.Errorf("an object in no pack: %v, want errSlowPath", err)
		}
	})
}

// TestPackReaderBounds checks that what the pack reader does not handle
// is left to go-git rather than read wrong: chains deeper than its bound,
// and a pack damaged after it was indexed.
func TestPackReaderBounds(t *testing.T) {
	work := deltaRepo(t)
	want := catAll(t, work)
	gitDir := t.TempDir()
	packAll(t, work, gitDir, false)

	defer func(n int) { maxDeltaDepth = n }(maxDeltaDepth)
	maxDeltaDepth = 1
	r := newPackReader(gitDir)
	r.refresh()
	slow := 0
	for h, w := range want {
		_, data, err := r.object(h)
		switch {
		case err == errSlowPath:
			slow++
		case err != nil:
			t.Fatalf("%s: %v", h, err)
		case !bytes.Equal(data, w.data):
			t.Fatalf("%s: wrong content", h)
		}
	}
	r.close()
	if slow == 0 {
		t.Fatal("with a delta depth bound of 1, no chain was left to go-git")
	}
	maxDeltaDepth = 64

	// Flip one bit in the middle of every object's compressed data.
	packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
	r = newPackReader(gitDir)
	r.refresh()
	defer r.close()
	raw, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	p := r.packs[0]
	for h := range want {
		off, _ := p.offset(h)
		hd, err := p.header(off)
		if err != nil {
			t.Fatal(err)
		}
		if i := hd.data + 4; i < int64(len(raw))-20 {
			raw[i] ^= 0x10
		}
	}
	p.f = readerAtCloser{bytes.NewReader(raw)}
	r.bases = baseCache{}
	for h, w := range want {
		if _, data, err := r.object(h); err == nil && !bytes.Equal(data, w.data) {
			t.Fatalf("%s: a damaged pack was read as if whole", h)
		}
	}
}

// FuzzParseTree checks the tree parser against go-git's on any input:
// the same entries, or both refuse it.
func FuzzParseTree(f *testing.F) {
	f.Add([]byte("100644 a\x00aaaaaaaaaaaaaaaaaaaa40000 b\x00bbbbbbbbbbbbbbbbbbbb"))
	f.Add([]byte("120000 link\x00cccccccccccccccccccc160000 sub\x00dddddddddddddddddddd100755 x\x00eeeeeeeeeeeeeeeeeeee"))
	f.Add([]byte("777777777777 a\x00aaaaaaaaaaaaaaaaaaaa"))
	f.Add([]byte("100644 \x00aaaaaaaaaaaaaaaaaaaa"))
	f.Add([]byte("100644 a\x00short"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseTree(plumbing.ZeroHash, data)
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.TreeObject)
		o.Write(data)
		want, werr := object.DecodeTree(nil, o)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseTree: %v; go-git: %v", err, werr)
		}
		if err != nil {
			return
		}
		if len(got.Entries) != len(want.Entries) {
			t.Fatalf("%d entries, go-git %d", len(got.Entries), len(want.Entries))
		}
		for i := range got.Entries {
			if got.Entries[i] != want.Entries[i] {
				t.Fatalf("entry %d: %+v, go-git %+v", i, got.Entries[i], want.Entries[i])
			}
		}
	})
}

// FuzzPackEntry reads an object from any bytes standing for a pack: it
// must fail or answer, never crash or allocate past largeObject.
func FuzzPackEntry(f *testing.F) {
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x65\x0c\x78\x9c"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &packIndex{f: readerAtCloser{bytes.NewReader(data)}, size: int64(len(data))}
		r := &packReader{}
		typ, got, err := r.at(p, 12, 0)
		if err == nil && int64(len(got)) > largeObject {
			t.Fatalf("a %s of %d bytes", typ, len(got))
		}
	})
}

// TestIndexPack indexes packs that git wrote, with offset and with
// reference deltas: the index is git's own, entry for entry (id, offset,
// CRC-32), and every object kept is git's. A damaged or truncated pack,
// and one whose objects pass the memory bound, are refused.
func TestIndexPack(t *testing.T) {
	eachPack(t, func(t *testing.T, gitDir string, _ bool, want map[plumbing.Hash]gitObject) {
		packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
		data, err := os.ReadFile(packs[0])
		if err != nil {
			t.Fatal(err)
		}
		objs, idx, sum, err := indexPack(data)
		if err != nil {
			t.Fatal(err)
		}
		gitIdx, err := openPackIndex(strings.TrimSuffix(packs[0], ".pack") + ".idx")
		if err != nil {
			t.Fatal(err)
		}
		defer gitIdx.f.Close()
		if sum != plumbing.Hash(gitIdx.idx.PackfileChecksum) {
			t.Errorf("pack checksum %s, git's idx has %x", sum, gitIdx.idx.PackfileChecksum)
		}
		var a, b bytes.Buffer
		if _, err := idxfile.NewEncoder(&a).Encode(idx); err != nil {
			t.Fatal(err)
		}
		if _, err := idxfile.NewEncoder(&b).Encode(gitIdx.idx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("the index written differs from git's (%d and %d bytes)", a.Len(), b.Len())
		}
		if len(objs) != len(want) {
			t.Errorf("%d objects kept, git has %d", len(objs), len(want))
		}
		for h, w := range want {
			o := objs[h]
			if o == nil {
				t.Fatalf("%s not kept", h)
			}
			got, err := readObject(o)
			if err != nil || o.Type().String() != w.typ || !bytes.Equal(got, w.data) {
				t.Fatalf("%s: a %s of %d bytes (%v), git has a %s of %d bytes", h, o.Type(), len(got), err, w.typ, len(w.data))
			}
		}

		bad := bytes.Clone(data)
		bad[len(bad)/2] ^= 1
		if _, _, _, err := indexPack(bad); err == nil {
			t.Error("a damaged pack was indexed")
		}
		if _, _, _, err := indexPack(data[:len(data)-1]); err == nil {
			t.Error("a truncated pack was indexed")
		}
		defer func(n int64) { maxPackMemory = n }(maxPackMemory)
		maxPackMemory = 4096
		if _, _, _, err := indexPack(data); err != errPackMemory {
			t.Errorf("a pack over the memory bound: %v, want errPackMemory", err)
		}
	})
}

// FuzzIndexPack indexes any bytes as a pack (with a valid checksum, so
// that the parser is reached): it must fail or answer within the memory
// bound, never crash.
func FuzzIndexPack(f *testing.F) {
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x02\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27\x65\x0d\x78\x9c\x63\x65\x60\x60\x00\x00\x00\x08\x00\x03"))
	f.Add([]byte("PACK\x00\x00\x00\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, body []byte) {
		defer func(n int64) { maxPackMemory = n }(maxPackMemory)
		maxPackMemory = 1 << 20
		sum := sha1.Sum(body)
		objs, _, _, err := indexPack(append(bytes.Clone(body), sum[:]...))
		if err != nil {
			return
		}
		var total int64
		for _, o := range objs {
			total += o.Size()
		}
		if total > maxPackMemory {
			t.Fatalf("%d bytes of objects kept, bound %d", total, maxPackMemory)
		}
	})
}

// FuzzCheckPack walks any bytes as a pack file before go-git would parse
// it: it must refuse or pass them, never crash, and pass only a pack
// whose entries it walked to the checksum.
func FuzzCheckPack(f *testing.F) {
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x02\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27\x65\x0d\x78\x9c\x63\x65\x60\x60\x00\x00\x00\x08\x00\x03"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x80\x00\x00\x35\x78\x9c\x4b\x4c\x4a\x06\x00\x02\x4d\x01\x27"))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha1.Sum(body)
		data := append(bytes.Clone(body), sum[:]...)
		if err := checkPack(bytes.NewReader(data), int64(len(data))); err == nil {
			// What it passes, indexPack (the same bounds) must take or
			// refuse for a reason other than the bounds.
			if _, _, _, err := indexPack(data); errors.Is(err, errPackLimit) {
				t.Fatalf("checkPack passed a pack indexPack refuses: %v", err)
			}
		}
	})
}
