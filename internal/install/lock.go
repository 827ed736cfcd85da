// Package install keeps the record of skills installed into agents' skill
// folders: the lock file (skills.lock), the digests that bind it to the
// installed bytes, the agents' folders, and the atomic placement of a
// skill folder. The fetching and verifying of skills is the host's; this
// package only records and compares what the host verified.
package install

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillport/skillport/skill"
)

// LockVersion is the lock file format this package reads and writes.
const LockVersion = 1

// LockName is the lock file's name, at the project root or in the user
// configuration directory.
const LockName = "skills.lock"

// MaxLockSize bounds the lock file read: a lock of 100,000 files is about
// 20 MB.
const MaxLockSize = 32 << 20

// Lock is the content of skills.lock.
type Lock struct {
	Version int `json:"version"`
	// Digest is [SetDigest] over Skills, "sha256:" and 64 hex digits.
	Digest string  `json:"digest"`
	Skills []Skill `json:"skills"`
}

// Skill is one installed skill.
type Skill struct {
	// Name is the skill's folder name in every agent folder.
	Name string `json:"name"`
	// Path is the skill path at its source ("acme/billing/refunds").
	Path string `json:"path"`
	// Source is the SOURCE argument as the user gave it.
	Source string `json:"source"`
	// Resolved is what Source resolved to when the skill was installed.
	Resolved Resolved `json:"resolved"`
	// Digest is [TreeDigest] of Files.
	Digest string `json:"digest"`
	// Files are the skill's files, sorted by path.
	Files []File `json:"files"`
	// Installed lists where the skill was written.
	Installed []Target `json:"installed"`
	// Signer is who signed the skill, as the trust policy verified it
	// when it was installed ("key:<id>" or "keyless:<issuer> <subject>",
	// docs/signing.md); empty when it was not verified.
	Signer string `json:"signer,omitempty"`
}

// SignerChange says how next's signer differs from the one old recorded,
// "" when it does not. A skill the lock has no signer for may become
// signed; one it has a signer for must keep that signer: anyone else, or
// no verified signer, is a change the user has to accept.
func SignerChange(old, next *Skill) string {
	switch {
	case old == nil || old.Signer == "" || old.Signer == next.Signer:
		return ""
	case next.Signer == "":
		return fmt.Sprintf("%s records it signed by %s, and it was not verified now (unsigned, or no --trusted-key/--trust-policy given); verify it, or pass --allow-signer-change", LockName, old.Signer)
	}
	return fmt.Sprintf("%s records it signed by %s, and it is now signed by %s; pass --allow-signer-change to accept the new signer", LockName, old.Signer, next.Signer)
}

// Resolved is what a source resolved to.
type Resolved struct {
	// Kind is "directory", "mcp" (an MCP server URL), "command" (a server
	// started on stdio), "git", "oci" or "site" (a web site with an Agent
	// Skills discovery document).
	Kind string `json:"kind"`
	// Dir is a directory source's absolute path.
	Dir string `json:"dir,omitempty"`
	// URL is an MCP server's URL, a git source's remote spec, or a site's
	// address as given.
	URL string `json:"url,omitempty"`
	// Command is a stdio server's command and arguments.
	Command []string `json:"command,omitempty"`
	// Server and ServerVersion are the server's serverInfo; for a git
	// source the version is the commit served, for an OCI source the
	// digest.
	Server        string `json:"server,omitempty"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// Document is, for a site, "sha256:" and the hex SHA-256 of its
	// discovery document as read.
	Document string `json:"document,omitempty"`
}

// File is one file of a skill.
type File struct {
	// Path is relative to the skill folder, slash-separated.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Target is one agent folder a skill was written to.
type Target struct {
	Agent string `json:"agent"`
	// Dir is the skill's folder (the agent's skills folder joined with
	// the skill's name), absolute. In the file, a folder inside the lock
	// file's own folder (a project's) is written relative to it,
	// slash-separated, so that a committed lock means the same folders in
	// every checkout ([Write], [Read]).
	Dir string `json:"dir"`
}

// FileOf returns the File record of content at path p.
func FileOf(p string, content []byte) File {
	sum := sha256.Sum256(content)
	return File{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

// TreeDigest is the digest of a skill's files: SHA-256 over the domain tag
// "skillport-tree-v1\n" followed, for each file in byte order of its path,
// by the path's length as an 8-byte big-endian integer, the path, the
// size as an 8-byte big-endian integer, and the 32 bytes of the content's
// SHA-256. Every field has a fixed length or a length prefix, so no two
// different trees encode alike: the file "ab" holding "c" and the file
// "a" holding "bc" differ in the path's length prefix.
func TreeDigest(files []File) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	io.WriteString(h, "skillport-tree-v1\n")
	for _, f := range sorted {
		writeField(h, f.Path)
		binary.Write(h, binary.BigEndian, uint64(f.Size))
		sum, _ := hex.DecodeString(f.SHA256)
		h.Write(sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// SetDigest is the digest of a lock's skills: SHA-256 over the domain tag
// "skillport-lock-v1\n" followed, for each skill in order of (source,
// path), by the length-prefixed source, path and name (as in
// [TreeDigest]) and the skill's tree digest string, length-prefixed.
func SetDigest(skills []Skill) string {
	sorted := slices.Clone(skills)
	sortSkills(sorted)
	h := sha256.New()
	io.WriteString(h, "skillport-lock-v1\n")
	for _, s := range sorted {
		writeField(h, s.Source)
		writeField(h, s.Path)
		writeField(h, s.Name)
		writeField(h, TreeDigest(s.Files))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func writeField(w io.Writer, s string) {
	binary.Write(w, binary.BigEndian, uint64(len(s)))
	io.WriteString(w, s)
}

func sortSkills(s []Skill) {
	slices.SortFunc(s, func(a, b Skill) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// Normalize sorts skills, files and targets and sets every digest, so
// that a lock written twice from the same install is the same bytes.
func (l *Lock) Normalize() {
	l.Version = LockVersion
	for i := range l.Skills {
		s := &l.Skills[i]
		slices.SortFunc(s.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
		slices.SortFunc(s.Installed, func(a, b Target) int { return cmp.Or(strings.Compare(a.Dir, b.Dir), strings.Compare(a.Agent, b.Agent)) })
		s.Digest = TreeDigest(s.Files)
	}
	sortSkills(l.Skills)
	if l.Skills == nil {
		l.Skills = []Skill{}
	}
	l.Digest = SetDigest(l.Skills)
}

// Marshal returns the lock as indented JSON, normalized.
func (l *Lock) Marshal() []byte {
	l.Normalize()
	data, _ := json.MarshalIndent(l, "", "  ")
	return append(data, '\n')
}

// ErrLock wraps every error of [Parse].
var ErrLock = errors.New("invalid lock file")

// Parse reads a lock file. name is used in errors. Everything is checked:
// the version, every path (relative, clean, slash-separated, no ".."),
// every digest's form, every skill name, every target folder (absolute,
// or relative to the lock's folder without "..", ending in the skill's
// name), and both digests against the content, so a hand-edited lock is
// refused rather than trusted. Relative folders are left as they are;
// [Read] resolves them.
func Parse(name string, data []byte) (*Lock, error) {
	fail := func(format string, args ...any) (*Lock, error) {
		return nil, fmt.Errorf("%w %s: %s; restore it from version control, or delete it and install again", ErrLock, name, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxLockSize {
		return fail("%d bytes, more than the %d a lock may hold", len(data), MaxLockSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return fail("%v", err)
	}
	if dec.More() {
		return fail("data after the JSON object")
	}
	if l.Version != LockVersion {
		return fail("version %d; this skillport reads version %d", l.Version, LockVersion)
	}
	seen := map[string]bool{}
	for i, s := range l.Skills {
		where := fmt.Sprintf("skills[%d]", i)
		if err := skill.ValidName(s.Name); err != nil {
			return fail("%s: %v", where, err)
		}
		if s.Source == "" {
			return fail("%s (%s): no source", where, s.Name)
		}
		key := s.Source + "\x00" + s.Path
		if seen[key] {
			return fail("%s (%s): listed twice for source %q", where, s.Name, s.Source)
		}
		seen[key] = true
		switch s.Resolved.Kind {
		case "directory", "mcp", "command", "git", "oci":
		case "site":
			if d, ok := strings.CutPrefix(s.Resolved.Document, "sha256:"); !ok || !hexDigest(d) {
				return fail("%s (%s): resolved.document must be sha256: and 64 lowercase hex digits", where, s.Name)
			}
		default:
			return fail("%s (%s): resolved.kind %q is not directory, mcp, command, git, oci or site", where, s.Name, s.Resolved.Kind)
		}
		files := map[string]bool{}
		for j, f := range s.Files {
			if !cleanRel(f.Path) {
				return fail("%s (%s): files[%d]: path %q is not a clean relative path", where, s.Name, j, f.Path)
			}
			if files[f.Path] {
				return fail("%s (%s): file %q listed twice", where, s.Name, f.Path)
			}
			files[f.Path] = true
			if !hexDigest(f.SHA256) {
				return fail("%s (%s): file %q: sha256 must be 64 lowercase hex digits", where, s.Name, f.Path)
			}
			if f.Size < 0 {
				return fail("%s (%s): file %q: negative size", where, s.Name, f.Path)
			}
		}
		if !files["SKILL.md"] {
			return fail("%s (%s): no SKILL.md among its files", where, s.Name)
		}
		if got := TreeDigest(s.Files); s.Digest != got {
			return fail("%s (%s): digest %q does not match its files (%s)", where, s.Name, s.Digest, got)
		}
		for j, t := range s.Installed {
			abs := filepath.IsAbs(t.Dir) && filepath.Clean(t.Dir) == t.Dir && filepath.Base(t.Dir) == s.Name
			rel := cleanRel(t.Dir) && path.Base(t.Dir) == s.Name
			if t.Agent == "" || !(abs || rel) {
				return fail("%s (%s): installed[%d]: needs an agent and a clean folder ending in %s, absolute or relative to the lock's folder", where, s.Name, j, s.Name)
			}
		}
		if s.Resolved.Kind == "directory" && !filepath.IsAbs(s.Resolved.Dir) && !cleanRel(s.Resolved.Dir) && s.Resolved.Dir != "." {
			return fail("%s (%s): resolved.dir must be absolute or relative to the lock's folder", where, s.Name)
		}
	}
	if got := SetDigest(l.Skills); l.Digest != got {
		return fail("digest %q does not match its skills (%s)", l.Digest, got)
	}
	return &l, nil
}

// cleanRel reports whether p is a relative, clean, slash-separated path
// inside its folder.
func cleanRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || path.Clean(p) != p {
		return false
	}
	return p != "." && p != ".." && !strings.HasPrefix(p, "../")
}

func hexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Diff is one way a skill differs from its lock record.
type Diff struct {
	// File is the file's path; "" for the skill as a whole.
	File string
	// What is "changed", "added" (not in the lock), "removed" (in the
	// lock, not here), or "not a regular file".
	What string
	// Want and Got are the digests (sha256:hex) where they apply.
	Want, Got string
}

// String says the difference in one line.
func (d Diff) String() string {
	switch d.What {
	case "changed":
		return fmt.Sprintf("%s changed: lock has sha256:%s, found sha256:%s", d.File, d.Want, d.Got)
	case "added":
		return fmt.Sprintf("%s added: lock has none, found sha256:%s", d.File, d.Got)
	case "removed":
		return fmt.Sprintf("%s removed: lock has sha256:%s, found none", d.File, d.Want)
	}
	return d.File + ": " + d.What
}

// Compare lists how got differs from want, in path order: files changed
// (content or size), added and removed.
func Compare(want, got []File) []Diff {
	w := map[string]File{}
	for _, f := range want {
		w[f.Path] = f
	}
	g := map[string]File{}
	for _, f := range got {
		g[f.Path] = f
	}
	var out []Diff
	for _, f := range want {
		o, ok := g[f.Path]
		switch {
		case !ok:
			out = append(out, Diff{File: f.Path, What: "removed", Want: f.SHA256})
		case o.SHA256 != f.SHA256 || o.Size != f.Size:
			out = append(out, Diff{File: f.Path, What: "changed", Want: f.SHA256, Got: o.SHA256})
		}
	}
	for _, f := range got {
		if _, ok := w[f.Path]; !ok {
			out = append(out, Diff{File: f.Path, What: "added", Got: f.SHA256})
		}
	}
	slices.SortStableFunc(out, func(a, b Diff) int { return strings.Compare(a.File, b.File) })
	return out
}
