package regapi

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/sigfile"
)

// Limits bound what one publish archive may unpack to.
type Limits struct {
	// MaxFiles bounds the entries (default DefaultMaxFiles).
	MaxFiles int
	// MaxBytes bounds the unpacked content (default DefaultMaxTreeBytes).
	MaxBytes int64
}

// Defaults of [Limits] and [Options].
const (
	DefaultMaxArchiveBytes = 64 << 20  // the request body, compressed
	DefaultMaxTreeBytes    = 256 << 20 // unpacked
	DefaultMaxFiles        = 20000
	maxNameBytes           = 1024
)

// errArchive marks a malformed or refused archive: the client's fault.
var errArchive = errors.New("bad publish archive")

// errTooBig marks an archive over its limits.
var errTooBig = errors.New("publish archive too large")

func (l Limits) orDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxTreeBytes
	}
	return l
}

// Extract unpacks a gzip-compressed tar archive from r into dir, an empty
// directory, within lim. Only regular files and directories are accepted,
// with relative names that stay inside dir; a link, a device, a name
// climbing out, a duplicate or anything past the limits refuses the whole
// archive, naming the entry. Files are written through an [os.Root] at
// dir, so nothing lands outside it whatever the names say.
func Extract(r io.Reader, dir string, lim Limits) error {
	lim = lim.orDefaults()
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: not gzip-compressed: %v", errArchive, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(gz)
	files := 0
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: not a tar archive: %v", errArchive, err)
		}
		if files++; files > lim.MaxFiles {
			return fmt.Errorf("%w: more than %d entries; publish a smaller tree", errTooBig, lim.MaxFiles)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if len(name) > maxNameBytes || name == "" || strings.ContainsRune(name, '\\') || !filepath.IsLocal(name) || path.Clean(name) != name {
			return fmt.Errorf("%w: entry %q: names must be clean relative paths inside the tree", errArchive, truncate(h.Name))
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", errArchive, name, err)
			}
			continue
		case tar.TypeReg:
		default:
			return fmt.Errorf("%w: entry %q is a link or special file; only regular files and directories are published", errArchive, name)
		}
		if h.Size < 0 || total+h.Size > lim.MaxBytes {
			return fmt.Errorf("%w: more than %d bytes unpacked; publish a smaller tree", errTooBig, lim.MaxBytes)
		}
		total += h.Size
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", errArchive, name, err)
			}
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("%w: entry %q: %v (a name given twice?)", errArchive, name, err)
		}
		// The header's size bounds the copy: tar stops at it.
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%w: entry %q: %v", errArchive, name, err)
		}
	}
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// WriteArchive writes the files of cat's skills, as the catalog reads
// them, to w as a gzip-compressed tar archive: what [Extract] unpacks
// into a tree the server publishes. Only the files the catalog publishes
// travel (no dotfiles it left out, no files outside skills), and each
// skill's signature bundle, at sigfile.Path of its directory.
func WriteArchive(w io.Writer, cat *catalog.Catalog) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	seen := map[string]bool{}
	for _, sk := range cat.Skills() {
		for _, f := range sk.Files {
			// A nested skill's files are its parent's too: sent once.
			if seen[f.Path] {
				continue
			}
			seen[f.Path] = true
			data, err := cat.ReadFile(f)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	// Each skill's bundle travels where a source tree keeps it
	// (sigfile.Path of the skill's directory): the replica's catalog reads
	// it from there, and the replica checks it (see checkSignatures).
	for _, sk := range cat.Skills() {
		if len(sk.Signature) == 0 {
			continue
		}
		name := sigfile.Path(sk.Dir)
		if seen[name] {
			return fmt.Errorf("%s is a file of a skill itself (--include-dotfiles of a tree whose root is a skill): its signature cannot travel beside it; publish without --include-dotfiles", name)
		}
		seen[name] = true
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(sk.Signature)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(sk.Signature); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
