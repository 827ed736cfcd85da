// Package scan looks through a skill's files for what skills are attacked
// with, before a registry serves them: hidden Unicode (bidi controls,
// zero-width and tag characters), instructions hidden in HTML comments,
// download-and-execute commands, instructions to modify the skill's own
// files, secrets, and allowed-tools wider than the namespace allows.
//
// [Builtin] is the scanner every publish runs; [External] runs a
// configured command that prints SARIF 2.1.0. Both report [Finding]s, the
// shape of a SARIF result, so that findings from either are stored and
// shown alike.
package scan

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
)

// Levels of a finding, as SARIF names them.
const (
	LevelError   = "error"
	LevelWarning = "warning"
	LevelNote    = "note"
)

// Rule ids of the built-in scanner.
const (
	RuleHiddenUnicode   = "hidden-unicode"
	RuleCommentHidden   = "html-comment-instructions"
	RuleDownloadExec    = "download-exec"
	RuleSelfModify      = "self-modify"
	RuleSecret          = "secret"
	RuleAllowedTools    = "allowed-tools"
	RuleScannerFailure  = "scanner-failure"
	BuiltinScannerName  = "skillport"
	maxFindingsPerRule  = 20 // per file: one attack repeated is one finding's worth of news
	maxMessageExcerptLn = 80
)

// Finding is one thing a scanner found: a SARIF result, flattened.
type Finding struct {
	Scanner string `json:"scanner"`
	RuleID  string `json:"ruleId"`
	Level   string `json:"level"`
	File    string `json:"file,omitempty"` // below the skill root, "/"-separated
	Line    int    `json:"line,omitempty"` // 1-based; 0 when not known
	Message string `json:"message"`
}

// String is the finding as one line: file:line: level rule: message.
func (f Finding) String() string {
	where := f.File
	if where == "" {
		where = "(skill)"
	}
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, f.Line)
	}
	return fmt.Sprintf("%s: %s %s/%s: %s", where, f.Level, f.Scanner, f.RuleID, f.Message)
}

// File is one file of the skill being scanned.
type File struct {
	Path string // below the skill root, "/"-separated; SKILL.md is "SKILL.md"
	Data []byte
}

// Skill is what a scanner looks at.
type Skill struct {
	Path string // the skill's path in the registry, for messages
	// AllowedTools is the skill's allowed-tools frontmatter, one tool per
	// element (see [SplitTools]).
	AllowedTools []string
	Files        []File
}

// Options tune the built-in scanner for a namespace.
type Options struct {
	// AllowedTools, when not nil, is what the namespace lets a skill
	// pre-approve: a skill whose allowed-tools names anything else gets an
	// allowed-tools finding. An entry "Bash" allows every Bash(...) form,
	// "Bash(git:*)" exactly that one, and "*" anything. nil checks nothing.
	AllowedTools []string
}

// Scanner scans one skill.
type Scanner interface {
	// Name names the scanner in findings.
	Name() string
	// Scan returns the skill's findings. An error means the scanner
	// failed (it did not run, hung, or printed garbage): the caller
	// reports it as [FailureFinding], never as a clean result.
	Scan(ctx context.Context, s *Skill) ([]Finding, error)
}

// FailureFinding is how a scanner's failure is recorded with a version: a
// failed scan is never a clean one.
func FailureFinding(scanner string, err error) Finding {
	return Finding{Scanner: scanner, RuleID: RuleScannerFailure, Level: LevelError, Message: oneLine(err.Error(), 300)}
}

// Builtin is the built-in scanner.
type Builtin struct{ Options Options }

// Name implements [Scanner].
func (b *Builtin) Name() string { return BuiltinScannerName }

// Scan implements [Scanner]; it never fails.
func (b *Builtin) Scan(_ context.Context, s *Skill) ([]Finding, error) {
	return Scan(s, &b.Options), nil
}

// Scan runs the built-in rules over s.
func Scan(s *Skill, opts *Options) []Finding {
	out := CheckTools(s.AllowedTools, opts)
	for _, f := range s.Files {
		out = append(out, ScanFile(f)...)
	}
	return out
}

// CheckTools is the skill-level rule of [Scan]: allowed-tools wider than
// opts allow.
func CheckTools(tools []string, opts *Options) []Finding {
	var out []Finding
	if opts != nil && opts.AllowedTools != nil {
		for _, t := range tools {
			if !toolAllowed(t, opts.AllowedTools) {
				out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleAllowedTools, Level: LevelError, File: "SKILL.md",
					Message: fmt.Sprintf("allowed-tools pre-approves %q, which the namespace does not allow (it allows %s); remove it or ask the namespace's administrator", t, strings.Join(opts.AllowedTools, ", "))})
			}
		}
	}
	return out
}

// textLike reports whether data is worth reading as text: binary content
// (a NUL in its first 8 KiB) is not instructions.
func textLike(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8<<10)], 0) < 0
}

// ScanFile runs the file rules of [Scan] over one file. Its findings
// depend on the content alone (File is f.Path), so that a publisher may
// scan content that many skills share once.
func ScanFile(f File) []Finding {
	if !textLike(f.Data) {
		return nil
	}
	// One pass notes which bytes occur: most files hold nothing any rule
	// looks for, and each rule needs a byte most text lacks.
	var seen [256]bool
	for _, c := range f.Data {
		seen[c] = true
	}
	var out []Finding
	if seen[0xE1] || seen[0xE2] || seen[0xEF] || seen[0xF3] {
		out = append(out, hiddenUnicode(f)...)
	}
	if seen['<'] {
		// Every text file: a model reads a comment in a script as readily
		// as one in Markdown.
		out = append(out, htmlComments(f)...)
	}
	if seen['|'] || seen['('] {
		out = append(out, downloadExec(f)...)
	}
	if seen['k'] || seen['K'] || seen['w'] {
		out = append(out, selfModify(f)...)
	}
	return append(out, secrets(f, &seen)...)
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// excerpt is the text around a match, safe to print: one line, no control
// or invisible characters, at most maxMessageExcerptLn runes.
func excerpt(b []byte) string {
	return oneLine(string(b), maxMessageExcerptLn)
}

func oneLine(s string, n int) string {
	var sb strings.Builder
	count := 0
	for _, r := range s {
		if count == n {
			sb.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case r < 0x20 || r == 0x7f || invisible(r) != "":
			sb.WriteString(fmt.Sprintf("<U+%04X>", r))
			count++
			continue
		}
		sb.WriteRune(r)
		count++
	}
	return sb.String()
}

// SplitTools splits an allowed-tools string into tools: space-separated,
// except inside parentheses ("Bash(git diff:*) Read" is two tools).
func SplitTools(s string) []string {
	var out []string
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ' ' || r == '\t' || r == ',' || r == '\n') && depth == 0:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// ToolsOf reads a frontmatter's allowed-tools value: a string of tools
// ([SplitTools]) or a list of them; nil for anything else.
func ToolsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return SplitTools(v)
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// toolAllowed reports whether tool is covered by one of allowed.
func toolAllowed(tool string, allowed []string) bool {
	name, _, _ := strings.Cut(tool, "(")
	for _, a := range allowed {
		switch {
		case a == "*", a == tool:
			return true
		case !strings.Contains(a, "(") && a == name:
			return true // "Bash" allows Bash(...) in every form
		}
		if ok, _ := path.Match(a, tool); ok {
			return true
		}
	}
	return false
}
