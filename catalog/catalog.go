// Package catalog turns a tree of Agent Skills into an immutable, digested
// snapshot that a server can publish and a host can trust.
//
// A [Catalog] is built from any fs.FS (a directory through [OpenDir], an
// embed.FS, an fstest.MapFS) by [Open]. Every directory holding a SKILL.md is
// a skill; nested skills are allowed and published flat. Each file gets its
// size, SHA-256 digest and MIME type, and each directory its children, so that
// listing, manifest and directory reads never touch the disk. Content is not
// held in memory: [Catalog.ReadFile] reads a file when it is served and
// refuses bytes that no longer match the published digest, so a reader never
// sees new bytes under an old digest ([ErrChanged]; build a new snapshot with
// [Catalog.Reload]).
//
// A skill that is invalid, over the per-skill limits, or reaches outside the
// root is excluded with a [Diagnostic]; it never takes the rest of the
// catalog down.
//
// URIs follow SEP-2640: the file at tree path p is served as
// skill://<prefix>/<p>, so the skill in directory "acme/billing/refunds" is
// skill://acme/billing/refunds/SKILL.md and its skill path is
// "acme/billing/refunds". Directories that hold no SKILL.md become prefix
// segments.
package catalog

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"github.com/skillport/skillport/skill"
)

// Defaults for [Options]; the per-skill limits are those of SEP-2640.
const (
	DefaultScheme   = "skill"
	DefaultMaxFiles = skill.MaxFiles
	DefaultMaxBytes = skill.MaxBytes
	// DefaultMaxDepth bounds how deep skills may sit below the root.
	DefaultMaxDepth = 16
	// MaxURILength is the longest URI published; longer ones are skipped.
	MaxURILength = skill.MaxURILength
)

// Sentinel errors, wrapped by diagnostics and by [Catalog.ReadFile]; test with errors.Is.
var (
	ErrInvalidSkill   = errors.New("invalid skill")
	ErrTooManyFiles   = errors.New("too many files")
	ErrTooLarge       = errors.New("too large")
	ErrSymlinkEscape  = errors.New("symbolic link leaves the root")
	ErrSymlinkLoop    = errors.New("symbolic link loop")
	ErrSpecialFile    = errors.New("not a regular file")
	ErrUnreadable     = errors.New("unreadable")
	ErrUnstable       = errors.New("file changed while it was being read")
	ErrAmbiguousEntry = errors.New("ambiguous skill entry file")
	ErrDuplicateURI   = errors.New("duplicate skill URI")
	ErrURITooLong     = errors.New("URI too long")
	ErrBadPath        = errors.New("path cannot be published as a URI")
	ErrHardlink       = errors.New("file has more than one hard link")
	// ErrChanged is returned by ReadFile when the file on disk no longer
	// matches the digest and size this snapshot published.
	ErrChanged = errors.New("file changed since the catalog was built")
	// ErrNotFound is returned for a URI this catalog does not serve.
	ErrNotFound = errors.New("not served")
)

// Options configure how a tree becomes a catalog. The zero value is usable.
type Options struct {
	// Prefix is prepended to every skill path: with Prefix "acme", the skill
	// in directory "pdf" is skill://acme/pdf/SKILL.md. Segments are separated
	// by "/" and must be lowercase ASCII letters, digits, "-" or ".".
	Prefix string
	// Scheme is the URI scheme, "skill" by default.
	Scheme string
	// IncludeDotFiles publishes files and directories whose names start
	// with "." (.git, .env, .DS_Store are left out by default).
	IncludeDotFiles bool
	// MaxFiles and MaxBytes bound each skill (files and total size, nested
	// skills' files included). Zero means the SEP-2640 limits, 512 and 16 MiB.
	MaxFiles int
	MaxBytes int64
	// Concurrency is how many files are hashed at once; zero means GOMAXPROCS.
	Concurrency int
	// Logger receives one line per skipped skill or file; nil means slog.Default().
	// Diagnostics are also kept in the catalog.
	Logger *slog.Logger
	// Strict refuses skills that break the rules real collections break
	// while hosts load them every day (see skill.ValidateOptions.Strict):
	// metadata values that are not strings, allowed-tools as a list, and a
	// name that differs from its folder. Without it they are published,
	// with a warning, frontmatter as written and the name as the last
	// segment of the skill path.
	Strict bool
	// AllowHardlinks publishes files whose link count is above one. By
	// default a skill holding one is refused: a hard link can give the tree
	// the content of a file outside it, which no path check can see.
	AllowHardlinks bool
	// KnownDigests, when set, is asked for the digest of each file that
	// carries a content id (see [ContentIdentifier]) and that no previous
	// snapshot describes, before the file is read: a git source keeps the
	// digests of its blobs beside its mirror so that a restart reads only
	// the SKILL.md files. It returns the "sha256:" digest and whether the
	// content is text. A wrong answer is caught when the file is served
	// (its bytes no longer match: [ErrChanged], and the next build re-reads
	// it). SKILL.md files are always read, to be parsed.
	KnownDigests func(contentID string, size int64) (digest string, text bool, ok bool)
	// Filter, when set, is called with each skill's path ("acme/pdf") and
	// frontmatter; returning false leaves the skill out without a diagnostic.
	Filter func(path string, fm skill.Frontmatter) bool
	// PackLater makes [Open] and [OpenDir] return the catalog before it is
	// packed into a few large allocations (about half a CPU-second of
	// serve's first build of an 18,400-skill tree): a server can answer
	// with it at once and serve the packed copy [Catalog.Pack] makes in
	// the background from then on. Unpacked, the catalog's objects lie
	// among the build's garbage and keep its pages resident. Reloads are
	// always packed.
	PackLater bool
}

// Catalog is an immutable snapshot of a skill tree. It is safe for
// concurrent use.
type Catalog struct {
	src    *source
	opts   Options
	skills []*Skill
	byURI  map[string]*Skill
	files  map[string]*File
	dirs   map[string]*Dir
	diags  []Diagnostic
	stats  Stats
	id     string
	built  time.Time
	// packed is set once the published objects sit in allocations of
	// their own (see compact).
	packed bool
}

// Skill is one published skill.
type Skill struct {
	// URI is the skill's SKILL.md URI, e.g. skill://acme/pdf/SKILL.md.
	URI string
	// Root is the skill root URI, the URI without "/SKILL.md".
	Root string
	// Path is the skill path, e.g. "acme/pdf"; its last segment is the name.
	Path string
	// Name is the frontmatter name, equal to the last segment of Path.
	Name string
	// Dir is the skill directory in the source tree ("." for the root).
	Dir string
	// Frontmatter is the SKILL.md frontmatter, verbatim.
	Frontmatter skill.Frontmatter
	// Files is every file of the skill, SKILL.md first, then by URI. Files of
	// nested skills are included, as SEP-2640 requires.
	Files []*File
	// Size is the total size of Files.
	Size int64
	// Findings are the warnings found in SKILL.md (a published skill has no errors).
	Findings []skill.Finding
	// Signature is the skill's Sigstore bundle, read from the source's
	// .skillport/signatures folder (docs/signing.md); nil when unsigned.
	// The catalog does not verify it: hosts do.
	Signature []byte
	// ScanFindings are the scan findings a registry recorded for this
	// version, a JSON array served under wire.MetaScanFindings; nil when
	// there are none (a directory or git catalog never has any).
	ScanFindings json.RawMessage
	// Review is "pending" when a governed registry serves the skill's
	// version before a reviewer approved it (observe mode,
	// docs/registry-governance.md); entries then say so in _meta. Empty
	// otherwise.
	Review string
}

// File is one published file.
type File struct {
	// URI is the file's resource URI.
	URI string
	// Path is the file's path in the source tree, slash-separated.
	Path string
	// Name is the base name.
	Name string
	// Size is the length in bytes.
	Size int64
	// Digest is "sha256:" and 64 lowercase hex digits over the raw bytes.
	Digest string
	// MIMEType is the media type, e.g. "text/markdown".
	MIMEType string
	// Text reports that the content is valid UTF-8 without NUL bytes, so it
	// can travel as JSON text without changing a byte.
	Text bool
	// Mode is what the source recorded of the file's permission bits:
	// 0755 for an executable file (any execute bit set on disk, mode
	// 100755 in a git tree), 0644 for another, 0 where the source records
	// none (a tree whose FileInfo reports no permission bits, a directory
	// on Windows, a registry, a skill read over MCP). It is not part of
	// the published entry (MCP carries no mode): the web catalog's
	// archives write it, and fall back to the "#!" rule of pull where it
	// is 0 (docs/cli.md, "Executable bits").
	Mode fs.FileMode
	// ModTime is the modification time seen when the file was hashed.
	ModTime time.Time

	ident   fileIdent // device, inode and change time, for digest reuse
	content string    // content id from a content-addressed tree, for digest reuse
}

// ContentIdentifier is implemented by the Sys() value of the fs.FileInfo of
// a file in a content-addressed tree, such as a git commit, where equal ids
// mean equal bytes. A later snapshot ([Catalog.ReloadFS]) reuses the digest
// of a file whose content id and size are unchanged instead of reading it
// again, which is what makes a new commit cost only its changed blobs.
type ContentIdentifier interface {
	ContentID() string
}

// Explainer is implemented by the Sys() value of the fs.FileInfo of an
// entry that is neither a regular file nor a directory (its type is
// fs.ModeIrregular), to say in the diagnostic what it is and what to do,
// e.g. a git submodule or a Git LFS pointer, which are reported and skipped
// rather than served as if they were the content.
type Explainer interface {
	Explain() string
}

// Dir is a directory resource: a skill root, a directory within a skill, or
// a prefix level above skills.
type Dir struct {
	// URI is the directory URI, without a trailing slash.
	URI string
	// Path is the directory's path in the source tree.
	Path string
	// Skill is the innermost skill containing the directory, nil for prefix levels.
	Skill *Skill
	// Children are the direct children, sorted by name.
	Children []Child
}

// Child is one entry of a directory.
type Child struct {
	URI  string
	Name string
	// File is set for files, nil for directories.
	File *File
}

// IsDir reports whether the child is a directory.
func (c Child) IsDir() bool { return c.File == nil }

// Diagnostic reports a skill or file left out of the catalog, or a warning.
// It encodes as the JSON object `skillport validate --json` prints, one
// per line: path, line, column, rule, severity, message.
type Diagnostic struct {
	// Path is the file or directory in the source tree the diagnostic is about.
	Path string `json:"path"`
	// Skill is the skill directory concerned, "" if none.
	Skill string `json:"-"`
	// Line and Column locate the problem in a SKILL.md, zero otherwise.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Rule is a stable id: a skill rule (see package skill) or a catalog rule.
	Rule string `json:"rule"`
	// Severity is skill.Error when something was left out.
	Severity skill.Severity `json:"severity"`
	// Message says what is wrong and what to do.
	Message string `json:"message"`
	// Err is the sentinel error, for errors.Is.
	Err error `json:"-"`
}

// Stats summarises a catalog.
type Stats struct {
	Skills   int   // published skills
	Invalid  int   // skills left out, each with an error diagnostic
	Skipped  int   // skill.md with the wrong case (a warning says to rename it), or left out by Filter
	Found    int   // SKILL.md files found (any case, links included): Skills + Invalid + Skipped
	Files    int   // distinct published files
	Bytes    int64 // total size of distinct published files
	Hashed   int   // files hashed while building (the rest reused digests)
	Reused   int   // files whose digest was reused from the previous snapshot
	Duration time.Duration
}

// Skills returns the published skills, sorted by URI. The slice must not be modified.
func (c *Catalog) Skills() []*Skill { return c.skills }

// Skill returns the skill whose SKILL.md has the given URI, or nil.
func (c *Catalog) Skill(uri string) *Skill { return c.byURI[uri] }

// File returns the published file with the given URI, or nil.
func (c *Catalog) File(uri string) *File { return c.files[uri] }

// Dir returns the directory with the given URI, or nil.
func (c *Catalog) Dir(uri string) *Dir { return c.dirs[uri] }

// Diagnostics returns what was left out or warned about, sorted by path.
func (c *Catalog) Diagnostics() []Diagnostic { return c.diags }

// Stats returns counts about the catalog.
func (c *Catalog) Stats() Stats { return c.stats }

// ID identifies the snapshot's content: two catalogs with the same ID
// publish the same URIs, frontmatter and digests, and have the same
// executable files ([File.Mode]).
func (c *Catalog) ID() string { return c.id }

// Options returns the options the catalog was built with.
func (c *Catalog) Options() Options { return c.opts }

// FS returns the tree the catalog was built from.
func (c *Catalog) FS() fs.FS { return c.src.fsys }
