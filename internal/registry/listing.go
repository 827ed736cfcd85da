package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	gitdiff "github.com/go-git/go-git/v5/utils/diff"
	"github.com/jackc/pgx/v5"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Listed is one skill of the registry as `registry ls` shows it.
type Listed struct {
	Path string `json:"path"`
	// Current is the version served, 0 when the skill is not served
	// (removed, or every version yanked).
	Current   int       `json:"current"`
	Versions  int       `json:"versions"`
	Digest    string    `json:"digest,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// List returns the skills whose path is prefix or below it ("" for
// every skill), by path, with the version each serves.
func List(ctx context.Context, conn *pgx.Conn, prefix string) ([]Listed, error) {
	prefix = strings.Trim(prefix, "/")
	rows, err := conn.Query(ctx, `SELECT s.path, coalesce(s.current, 0), coalesce(v.digest, ''), s.updated_at,
		(SELECT count(*) FROM versions a WHERE a.path = s.path)
		FROM skills s LEFT JOIN versions v ON v.path = s.path AND v.version = s.current
		WHERE $1 = '' OR s.path = $1 OR starts_with(s.path, $1 || '/') ORDER BY s.path`, prefix)
	if err != nil {
		return nil, dbError("ls", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Listed, error) {
		var l Listed
		err := r.Scan(&l.Path, &l.Current, &l.Digest, &l.UpdatedAt, &l.Versions)
		return l, err
	})
	return out, dbError("ls", err)
}

// Served returns the version a skill serves, 0 when it serves none.
func Served(ctx context.Context, conn *pgx.Conn, path string) (int, error) {
	var v int
	err := conn.QueryRow(ctx, `SELECT coalesce(current, 0) FROM skills WHERE path = $1`, path).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, dbError("served", err)
}

// Limits of TextDiff: a file larger than MaxDiffFileBytes is summarised,
// never compared, and the diff of one file stops at MaxDiffBytes.
const (
	MaxDiffFileBytes = 256 << 10
	MaxDiffBytes     = 64 << 10
)

// TextDiff returns the unified diff (three lines of context) of a text
// file changed between versions a and b of a skill, as c (from [Diff])
// describes it; "" for a file that is not text in both versions or is
// larger than MaxDiffFileBytes. A diff longer than MaxDiffBytes is cut,
// saying so.
func TextDiff(ctx context.Context, conn *pgx.Conn, path string, a, b int, c FileChange) (string, error) {
	if c.Change != "changed" || c.OldSize > MaxDiffFileBytes || c.NewSize > MaxDiffFileBytes {
		return "", nil
	}
	ma, err := versionManifest(ctx, conn, path, a)
	if err != nil {
		return "", err
	}
	mb, err := versionManifest(ctx, conn, path, b)
	if err != nil {
		return "", err
	}
	if !isText(ma, c.Path) || !isText(mb, c.Path) {
		return "", nil
	}
	var old, cur []byte
	if err := conn.QueryRow(ctx, `SELECT data FROM blobs WHERE digest = $1`, c.OldDigest).Scan(&old); err != nil {
		return "", dbError("diff", err)
	}
	if err := conn.QueryRow(ctx, `SELECT data FROM blobs WHERE digest = $1`, c.NewDigest).Scan(&cur); err != nil {
		return "", dbError("diff", err)
	}
	var chunks []fdiff.Chunk
	for _, d := range gitdiff.DoWithTimeout(string(old), string(cur), 2*time.Second) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		chunks = append(chunks, chunk{d.Text, op})
	}
	var sb strings.Builder
	w := &cappedWriter{b: &sb, left: MaxDiffBytes}
	// The index line shows git's blob ids, which `git hash-object` of
	// either file reproduces.
	p := patch{file{c.Path, plumbing.ComputeHash(plumbing.BlobObject, old)}, file{c.Path, plumbing.ComputeHash(plumbing.BlobObject, cur)}, chunks}
	if err := fdiff.NewUnifiedEncoder(w, fdiff.DefaultContextLines).Encode(p); err != nil && !errors.Is(err, errCapped) {
		return "", fmt.Errorf("registry: diff of %s: %w", c.Path, err)
	}
	if w.cut {
		fmt.Fprintf(&sb, "\n... diff cut at %d bytes\n", MaxDiffBytes)
	}
	return sb.String(), nil
}

func isText(m manifest, rel string) bool {
	for _, f := range m.Files {
		if f.Rel == rel {
			return f.Text
		}
	}
	return false
}

// The go-git unified encoder's view of one changed file.
type (
	chunk struct {
		content string
		op      fdiff.Operation
	}
	file struct {
		path string
		hash plumbing.Hash
	}
	patch struct {
		from, to file
		chunks   []fdiff.Chunk
	}
)

func (c chunk) Content() string                 { return c.content }
func (c chunk) Type() fdiff.Operation           { return c.op }
func (f file) Hash() plumbing.Hash              { return f.hash }
func (f file) Mode() filemode.FileMode          { return filemode.Regular }
func (f file) Path() string                     { return f.path }
func (p patch) FilePatches() []fdiff.FilePatch  { return []fdiff.FilePatch{p} }
func (p patch) Message() string                 { return "" }
func (p patch) IsBinary() bool                  { return false }
func (p patch) Files() (fdiff.File, fdiff.File) { return p.from, p.to }
func (p patch) Chunks() []fdiff.Chunk           { return p.chunks }

var errCapped = errors.New("diff cut")

// cappedWriter keeps the first left bytes written to it.
type cappedWriter struct {
	b    *strings.Builder
	left int
	cut  bool
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		w.b.Write(p[:w.left])
		w.left, w.cut = 0, true
		return 0, errCapped
	}
	w.b.Write(p)
	w.left -= len(p)
	return len(p), nil
}
