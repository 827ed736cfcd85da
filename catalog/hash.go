package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"unicode/utf8"
)

// maxAttempts bounds re-reads of a file that changes while it is hashed.
const maxAttempts = 3

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// hashAll digests every file of every surviving candidate, in parallel,
// streaming (only SKILL.md is kept in memory, to be parsed).
func (b *builder) hashAll(cands []*candidate) {
	seen := map[*walkFile]bool{}
	var jobs []*walkFile
	for _, c := range cands {
		if c.out {
			continue
		}
		for _, f := range c.files {
			if !seen[f] {
				seen[f] = true
				jobs = append(jobs, f)
			}
		}
	}
	// Reuse digests of unchanged files; SKILL.md must still be read to parse it.
	var todo []*walkFile
	for _, f := range jobs {
		if prev := b.prevBy[f.path]; prev != nil && !b.dirty[f.path] && prev.ident.same(f.ident) &&
			prev.Size == f.info.Size() && prev.ModTime.Equal(f.info.ModTime()) {
			if f.name != FileNameSKILL {
				f.reused, f.digest, f.text = prev, prev.Digest, prev.Text
				b.reused++
				continue
			}
		}
		todo = append(todo, f)
	}
	b.hashed = len(todo)

	workers := b.opts.Concurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(todo))
	ch := make(chan *walkFile)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			for f := range ch {
				f.err = b.hashFile(f, h)
			}
		}()
	}
	for _, f := range todo {
		ch <- f
	}
	close(ch)
	wg.Wait()
}

// hashFile digests one file. The file must read as exactly the size seen in
// the walk, with the same size and modification time before and after: a
// file that changes while it is read is read again, and after maxAttempts
// the skill is left out rather than published with a wrong digest.
func (b *builder) hashFile(f *walkFile, h hash.Hash) error {
	for attempt := 0; ; attempt++ {
		err := b.hashOnce(f, h)
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
		f.info, f.ident = fi, identOf(fi)
	}
}

var errRetry = fmt.Errorf("retry")

func (b *builder) hashOnce(f *walkFile, h hash.Hash) error {
	fh, err := b.src.fsys.Open(f.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	defer fh.Close()
	size := f.info.Size()
	h.Reset()
	var tv textValidator
	var n int64
	if f.name == FileNameSKILL {
		var buf bytes.Buffer
		buf.Grow(int(size) + 1)
		n, err = io.Copy(&buf, io.LimitReader(fh, size+1))
		if err == nil {
			f.data = buf.Bytes()
			h.Write(f.data)
			tv.Write(f.data)
		}
	} else {
		bp := bufPool.Get().(*[]byte)
		n, err = io.CopyBuffer(io.MultiWriter(h, &tv), io.LimitReader(fh, size+1), *bp)
		bufPool.Put(bp)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	after, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, stripOp(err))
	}
	if n != size || after.Size() != size || !after.ModTime().Equal(f.info.ModTime()) {
		f.data = nil
		return errRetry
	}
	f.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	f.text = tv.valid()
	return nil
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
	if !utf8.Valid(p[:end]) {
		t.bad = true
		return n, nil
	}
	t.np = copy(t.pending[:], p[end:])
	return n, nil
}

func (t *textValidator) valid() bool { return !t.bad && t.np == 0 }
