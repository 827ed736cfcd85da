package gitsource

import "github.com/skillport/skillport/internal/gitspec"

// The source syntax lives in internal/gitspec, which imports no git
// implementation, so that a host can parse a git source without building
// go-git; these names keep this package's callers reading as before.

// SpecPrefix starts every git source: git+URL[@REF][#SUBDIR].
const SpecPrefix = gitspec.SpecPrefix

// MaxSpecLength bounds a source spec; longer ones are refused.
const MaxSpecLength = gitspec.MaxSpecLength

// Spec is a parsed git source, git+URL[@REF][#SUBDIR].
type Spec = gitspec.Spec

// ErrBadSpec is wrapped by every error of [ParseSpec].
var ErrBadSpec = gitspec.ErrBadSpec

// IsSpec reports whether s is meant as a git source (starts with "git+").
func IsSpec(s string) bool { return gitspec.IsSpec(s) }

// ParseSpec parses git+URL[@REF][#SUBDIR]; see [gitspec.ParseSpec].
func ParseSpec(s string) (Spec, error) { return gitspec.ParseSpec(s) }

func redactURL(raw string) string { return gitspec.RedactURL(raw) }
