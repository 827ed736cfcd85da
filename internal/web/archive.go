package web

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/filemode"
	"github.com/skillport/skillport/internal/published"
)

// indexTypeArchive is the discovery entry type of a skill with files
// besides SKILL.md: the discovery specification has such skills published
// as an archive of the skill folder, so that a host reading the site over
// plain HTTP gets all of the skill, not its SKILL.md alone.
const indexTypeArchive = "archive"

// archiveSuffix ends the URL of a skill's archive, /archive/PATH.tar.gz.
const archiveSuffix = ".tar.gz"

// skillArchive packs the files of sk (nested skills' included, as over
// MCP) as a .tar.gz with the files at its root. The bytes depend on the
// files alone (sorted as the catalog lists them, no times or owners; the
// mode is the one the source recorded, 0755 or 0644, or pull's "#!" rule
// where it recorded none: internal/filemode), so the digest the discovery
// document publishes holds for every download of the same snapshot.
func skillArchive(ctx context.Context, snap published.Snapshot, sk *catalog.Skill) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(gz)
	gz.Reset(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range sk.Files {
		data, err := snap.ReadFile(ctx, f)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: relPath(sk, f), Mode: int64(filemode.Of(f.Mode, data)), Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipPool holds gzip writers: each carries some hundred kilobytes of
// compressor state, which packing every skill of a catalog for the
// discovery document would otherwise allocate anew per skill.
var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return gz
}}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// serveArchive answers /archive/PATH.tar.gz, the archive entry of the
// discovery document for the skill at PATH.
func (h *Handler) serveArchive(w http.ResponseWriter, r *http.Request) {
	snap := h.snapshot(r)
	p, ok := strings.CutSuffix(r.PathValue("rest"), archiveSuffix)
	sk := h.visibleSkill(r, snap, p)
	if !ok || sk == nil || len(sk.Files) < 2 {
		h.notFound(w, "no skill archive at /archive/"+r.PathValue("rest"))
		return
	}
	var size int64
	for _, f := range sk.Files {
		size += f.Size
	}
	// A file read, and the archive growing beside it.
	release, ok := charge(w, r, 2*size)
	if !ok {
		return
	}
	defer release()
	data, err := skillArchive(r.Context(), snap, sk)
	if err != nil {
		h.log.Warn("web: packing skill", "uri", sk.URI, "err", err)
		http.Error(w, "cannot read "+sk.URI+" now; retry", http.StatusServiceUnavailable)
		return
	}
	d := digestOf(data)
	hd := w.Header()
	hd.Set("Content-Type", "application/gzip")
	hd.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(sk.Name+archiveSuffix))
	hd.Set("Repr-Digest", reprDigest(d))
	hd.Set("ETag", `"`+d+`"`)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}
