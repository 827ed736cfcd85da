package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/bits"
	"path"
	"sync"
	"unicode/utf8"

	"github.com/skillport/skillport/skill"
)

// maxAttempts bounds re-reads of a file that changes while it is hashed.
const maxAttempts = 3

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// hashAll digests the files of surviving candidates that the walk did not
// (those it reached outside a directory it read as part of a skill), in
// parallel, streaming (only SKILL.md is kept in memory, until parsed).
func (b *builder) hashAll(cands []*candidate) {
	// The walk digests almost every file: only the rest are looked up in
	// seen, which keeps a file shared by nested skills from being queued
	// twice.
	seen := map[*walkFile]bool{}
	var todo []*walkFile
	for _, c := range cands {
		if c.out {
			continue
		}
		for _, f := range c.files {
			if f.done || seen[f] {
				continue
			}
			seen[f] = true
			if !b.reuse(f) {
				todo = append(todo, f)
			}
		}
	}
	workers := min(b.workers(), len(todo))
	ch := make(chan *walkFile)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newFileReader()
			for f := range ch {
				b.digest(f, r)
			}
		}()
	}
	for _, f := range todo {
		ch <- f
	}
	close(ch)
	wg.Wait()
}

// reuse takes f's digest from the previous snapshot when f is unchanged:
// same size, modification time, inode and change time, and not found
// changed by ReadFile since. An unchanged SKILL.md that was the entry of a
// published skill in the same directory keeps that skill's frontmatter and
// findings too, so it is neither read nor parsed again.
func (b *builder) reuse(f *walkFile) bool {
	prev := b.prevBy[f.path]
	if prev == nil && f.content != "" && f.name != FileNameSKILL && b.opts.KnownDigests != nil && !b.dirty[f.path] {
		if d, text, ok := b.opts.KnownDigests(f.content, f.size); ok {
			f.digest, f.text, f.done = d, text, true
			b.reused.Add(1)
			return true
		}
	}
	if prev == nil || b.dirty[f.path] || prev.Size != f.size || prev.Mode != b.modeOf(f) {
		// A new mode needs a new File (a git commit can flip 100644 to
		// 100755 and keep the blob id); the digest is read again, which
		// costs one file in the rare commit that does it.
		return false
	}
	if f.content != "" || prev.content != "" {
		// A content-addressed tree: the id says it all, times mean nothing.
		if f.content != prev.content {
			return false
		}
	} else if !prev.ident.same(f.ident) || !prev.ModTime.Equal(f.mtime) {
		return false
	}
	if f.name == FileNameSKILL {
		s := b.prevSkills[path.Dir(f.path)]
		if s == nil || len(s.Files) == 0 || s.Files[0].Path != f.path {
			return false // not a published skill's entry: parse it again
		}
		f.prevSkill, f.parsed, f.fm, f.findings = s, true, s.Frontmatter, s.Findings
	}
	f.reused, f.digest, f.text, f.done = prev, prev.Digest, prev.Text, true
	b.reused.Add(1)
	return true
}

// fileReader is what each goroutine that digests files keeps for itself:
// a hash, and a SKILL.md parser, which parses the many small frontmatters
// of a tree for half the garbage of one parse each (skill.Parser).
type fileReader struct {
	h      hash.Hash
	parser skill.Parser
	dirent []byte // the getdents buffer of the descriptor walk (direntBuf)
}

func newFileReader() *fileReader { return &fileReader{h: sha256.New()} }

// digest hashes f, opening it by its path in the tree's fs.FS, and parses
// it if it is a SKILL.md.
func (b *builder) digest(f *walkFile, r *fileReader) {
	b.hashed.Add(1)
	// One buffer serves every read of f, and holds a SKILL.md that fits
	// until it is parsed, below.
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	f.err = b.hashFile(f, r.h, *bp)
	f.done = true
	if f.err == nil && f.name == FileNameSKILL {
		b.parse(f, &r.parser)
	}
}

// dropData forgets the bytes read of a SKILL.md.
func (f *walkFile) dropData() {
	if f.entry != nil {
		f.data = nil
	}
}

// parse parses and validates a SKILL.md that was read, and drops its bytes,
// with p when the caller has one of its own.
func (b *builder) parse(f *walkFile, p *skill.Parser) {
	f.parsed = true
	var doc *skill.Document
	var err error
	if p != nil {
		doc, err = p.Parse(f.data)
	} else {
		doc, err = skill.Parse(f.data)
	}
	f.data = nil
	if err != nil {
		f.parseErr = err
		// skill.Parse checks the encoding of the whole file first, so a
		// SKILL.md is text unless that is what it refused: its bytes are
		// not checked twice (hashOnce and hashAt leave it to this).
		if errors.Is(err, skill.ErrInvalidUTF8) || errors.Is(err, skill.ErrNUL) {
			f.text = false
		}
		return
	}
	f.findings = skill.ValidateWith(doc, &skill.ValidateOptions{Dir: b.folderName(path.Dir(f.path)), Strict: b.opts.Strict})
	f.fm = doc.Frontmatter.WithoutPositions()
	if b.src.check && b.opts.Filter == nil {
		// A check keeps the name alone, to map the tree with; the rest of
		// the frontmatter would only be held until the end of the walk.
		f.checkName, f.fm = f.fm.Name(), skill.Frontmatter{}
	}
}

// hashFile digests one file. The file must read as exactly the size seen in
// the walk, with the same size and modification time before and after: a
// file that changes while it is read is read again, and after maxAttempts
// the skill is left out rather than published with a wrong digest.
func (b *builder) hashFile(f *walkFile, h hash.Hash, buf []byte) error {
	for attempt := 0; ; attempt++ {
		err := b.hashOnce(f, h, buf)
		if err == nil {
			return nil
		}
		if err != errRetry || attempt+1 >= maxAttempts {
			if err == errRetry {
				return fmt.Errorf("%w: %s", ErrUnstable, f.path)
			}
			return err
		}
		fi, serr := fs.Stat(b.src.fsys, f.path)
		if serr != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s vanished while being read", ErrUnreadable, f.path)
		}
		f.setInfo(fi)
	}
}

var errRetry = fmt.Errorf("retry")

func (b *builder) hashOnce(f *walkFile, h hash.Hash, buf []byte) error {
	fh, err := b.src.fsys.Open(f.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	defer fh.Close()
	if b.src.check && f.name != FileNameSKILL {
		// Opened (so an unreadable file is found) and stat'ed, not read.
		fi, err := fh.Stat()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
		}
		f.setInfo(fi)
		return nil
	}
	size := f.size
	h.Reset()
	var tv textValidator
	var n int64
	if f.name == FileNameSKILL {
		// Kept whole for the parser: in buf when it fits (the caller
		// parses it before reusing buf), else in memory of its own. One
		// byte more than the size tells a file that grew.
		data := buf
		if int64(len(data)) <= size {
			data = make([]byte, size+1)
		}
		var k int
		k, err = io.ReadFull(fh, data[:size+1])
		n = int64(k)
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil
		}
		if err == nil {
			f.data = data[:k]
			h.Write(f.data) // its text check is skill.Parse's, in parse
		}
	} else {
		n, err = io.CopyBuffer(io.MultiWriter(h, &tv), io.LimitReader(fh, size+1), buf)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	after, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	if n != size || after.Size() != size || !after.ModTime().Equal(f.mtime) {
		f.dropData()
		return errRetry
	}
	f.digest = digestString(h)
	f.text = tv.valid()
	return nil
}

// digestString formats h's sum as "sha256:" and 64 lowercase hex digits,
// in one allocation.
func digestString(h hash.Hash) string {
	var sum [sha256.Size]byte
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	hex.Encode(out[len("sha256:"):], h.Sum(sum[:0]))
	return string(out[:])
}

// setInfo records what a stat of f returned.
func (f *walkFile) setInfo(fi fs.FileInfo) {
	f.size, f.mtime, f.ident, f.mode = fi.Size(), fi.ModTime(), identOf(fi), fi.Mode().Perm()
	if ci, ok := fi.Sys().(ContentIdentifier); ok {
		f.content = ci.ContentID()
	}
}

// textValidator checks, while streaming, that content is valid UTF-8 with no
// NUL bytes, carrying an incomplete rune across writes.
type textValidator struct {
	bad     bool
	pending [utf8.UTFMax]byte
	np      int
}

func (t *textValidator) Write(p []byte) (int, error) {
	if t.bad {
		return len(p), nil
	}
	n := len(p)
	if t.np > 0 {
		// Complete the pending rune with up to 3 bytes from p.
		need := min(utf8.UTFMax-t.np, len(p))
		var tmp [2 * utf8.UTFMax]byte
		k := copy(tmp[:], t.pending[:t.np])
		k += copy(tmp[k:], p[:need])
		if !utf8.FullRune(tmp[:k]) {
			t.np = copy(t.pending[:], tmp[:k])
			return n, nil
		}
		r, size := utf8.DecodeRune(tmp[:k])
		if r == utf8.RuneError && size <= 1 {
			t.bad = true
			return n, nil
		}
		p = p[size-t.np:]
		t.np = 0
	}
	if bytes.IndexByte(p, 0) >= 0 {
		t.bad = true
		return n, nil
	}
	// Hold back a trailing incomplete rune.
	end := len(p)
	for i := 1; i <= utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-i:]) {
				end = len(p) - i
			}
			break
		}
	}
	if !validUTF8(p[:end]) {
		t.bad = true
		return n, nil
	}
	t.np = copy(t.pending[:], p[end:])
	return n, nil
}

// validUTF8 is utf8.Valid, faster on text that mixes ASCII with other
// characters (accented words, CJK, emoji every few dozen bytes), as skill
// files in many languages do: utf8.Valid steps byte by byte up to each
// non-ASCII character, where this jumps to it from a word of 8 bytes and
// lets utf8.DecodeRune check it. On such text (the generated trees) it
// checks about 1.5 times as many bytes per second; on pure ASCII both skip
// 32 bytes at a time.
func validUTF8(p []byte) bool {
	const hi = 0x8080808080808080 // the high bit of each byte
	for len(p) >= 8 {
		if m := binary.LittleEndian.Uint64(p) & hi; m != 0 {
			p = p[bits.TrailingZeros64(m)/8:] // the first non-ASCII byte
			r, size := utf8.DecodeRune(p)
			if r == utf8.RuneError && size == 1 {
				return false
			}
			p = p[size:]
			continue
		}
		p = p[8:]
		for len(p) >= 32 && (binary.LittleEndian.Uint64(p)|binary.LittleEndian.Uint64(p[8:])|
			binary.LittleEndian.Uint64(p[16:])|binary.LittleEndian.Uint64(p[24:]))&hi == 0 {
			p = p[32:]
		}
	}
	return utf8.Valid(p)
}

func (t *textValidator) valid() bool { return !t.bad && t.np == 0 }
