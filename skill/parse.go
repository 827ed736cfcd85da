package skill

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FileName is the name of the file that makes a directory a skill.
const FileName = "SKILL.md"

// MaxFrontmatterBytes bounds the YAML text between the delimiters. A
// frontmatter block is a few hundred bytes in practice; the bound keeps a
// hostile file from costing more than this much memory to reject.
const MaxFrontmatterBytes = 64 << 10

// maxDepth bounds nesting of mappings and sequences in the frontmatter.
const maxDepth = 32

// Sentinel errors wrapped by [*ParseError]; test with errors.Is.
var (
	ErrNoFrontmatter   = errors.New("no frontmatter: SKILL.md must begin with a line \"---\"")
	ErrUnterminated    = errors.New("frontmatter is not terminated by a line \"---\"")
	ErrTooLarge        = errors.New("frontmatter is too large")
	ErrInvalidUTF8     = errors.New("invalid UTF-8")
	ErrNUL             = errors.New("NUL byte")
	ErrSyntax          = errors.New("invalid YAML")
	ErrNotMapping      = errors.New("frontmatter is not a mapping")
	ErrAlias           = errors.New("YAML anchors and aliases are not allowed")
	ErrTag             = errors.New("YAML tags are not allowed")
	ErrDuplicateKey    = errors.New("duplicate key")
	ErrKeyType         = errors.New("mapping keys must be strings")
	ErrUnrepresentable = errors.New("value has no JSON representation")
	ErrTooDeep         = errors.New("frontmatter is nested too deeply")
)

// ParseError reports why a SKILL.md could not be parsed, and where.
type ParseError struct {
	Line   int   // 1-based line in the file, 0 if unknown
	Column int   // 1-based column (in characters), 0 if unknown
	Offset int64 // byte offset in the file, -1 if unknown
	Rule   string
	Msg    string
	Err    error // one of the sentinel errors above
}

func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return e.Msg
}

func (e *ParseError) Unwrap() error { return e.Err }

// Finding converts the error into a validation finding.
func (e *ParseError) Finding() Finding {
	return Finding{Rule: e.Rule, Severity: Error, Line: e.Line, Column: e.Column, Message: e.Msg}
}

// Document is a parsed SKILL.md.
type Document struct {
	// Frontmatter is the YAML frontmatter as an ordered JSON-compatible value.
	Frontmatter Frontmatter
	// Body is everything after the closing delimiter line, byte for byte.
	Body []byte
	// BodyLine is the 1-based line on which Body starts.
	BodyLine int
}

// Parse parses the bytes of a SKILL.md. A leading UTF-8 byte order mark and
// CRLF line endings are accepted. The file must be valid UTF-8 without NUL
// bytes. Errors are *ParseError values wrapping a sentinel error.
func Parse(data []byte) (*Document, error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, &ParseError{Offset: int64(off), Rule: RuleEncoding, Err: ErrInvalidUTF8,
			Msg: fmt.Sprintf("invalid UTF-8 at byte offset %d; save the file as UTF-8", off)}
	}
	if off := bytes.IndexByte(data, 0); off >= 0 {
		return nil, &ParseError{Offset: int64(off), Rule: RuleEncoding, Err: ErrNUL,
			Msg: fmt.Sprintf("NUL byte at byte offset %d; SKILL.md must be text", off)}
	}
	text := bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))

	first, rest, ok := cutLine(text)
	if !isDelimiter(first) {
		_ = ok
		return nil, &ParseError{Line: 1, Column: 1, Offset: -1, Rule: RuleFrontmatterMissing, Err: ErrNoFrontmatter,
			Msg: "frontmatter: missing; SKILL.md must start with a line \"---\", the YAML fields, and a closing \"---\""}
	}
	yamlStart := len(text) - len(rest)
	line := 2
	pos := yamlStart
	for {
		if pos-yamlStart > MaxFrontmatterBytes {
			return nil, &ParseError{Line: 2, Column: 1, Offset: -1, Rule: RuleFrontmatterSize, Err: ErrTooLarge,
				Msg: fmt.Sprintf("frontmatter: larger than %d bytes", MaxFrontmatterBytes)}
		}
		if pos >= len(text) {
			return nil, &ParseError{Line: 1, Column: 1, Offset: -1, Rule: RuleFrontmatterUnterminated, Err: ErrUnterminated,
				Msg: "frontmatter: opened on line 1 but never closed; add a line \"---\" after the last field"}
		}
		l, next, _ := cutLine(text[pos:])
		if isDelimiter(l) {
			yamlText := text[yamlStart:pos]
			fm, err := parseFrontmatter(yamlText, 1)
			if err != nil {
				return nil, err
			}
			return &Document{Frontmatter: fm, Body: next, BodyLine: line + 1}, nil
		}
		pos = len(text) - len(next)
		line++
	}
}

// cutLine splits off the first line, without its line terminator.
func cutLine(b []byte) (line, rest []byte, found bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	return b[:i], b[i+1:], true
}

// isDelimiter reports whether a line is "---", allowing a trailing CR and
// trailing blanks as editors leave them.
func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// parseFrontmatter parses YAML text whose first line is line lineOffset+1 of the file.
func parseFrontmatter(text []byte, lineOffset int) (Frontmatter, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Frontmatter{}, &ParseError{Line: lineOffset, Column: 1, Offset: -1, Rule: RuleFrontmatterType, Err: ErrNotMapping,
				Msg: "frontmatter: empty; it must be a YAML mapping with at least name and description"}
		}
		return Frontmatter{}, syntaxError(err, lineOffset)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Frontmatter{}, &ParseError{Line: extra.Line + lineOffset, Column: extra.Column, Offset: -1, Rule: RuleFrontmatterSyntax, Err: ErrSyntax,
			Msg: "frontmatter: holds more than one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return Frontmatter{}, syntaxError(err, lineOffset)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return Frontmatter{}, &ParseError{Line: doc.Line + lineOffset, Column: doc.Column, Offset: -1, Rule: RuleFrontmatterType, Err: ErrNotMapping,
			Msg: fmt.Sprintf("frontmatter: is a YAML %s; it must be a mapping of fields such as \"name: my-skill\"", kindName(doc))}
	}
	c := converter{lineOffset: lineOffset}
	return c.frontmatter(doc)
}

func syntaxError(err error, lineOffset int) error {
	msg := err.Error()
	line := 0
	// go-yaml reports "yaml: line N: ..."; shift N to a file line.
	var n int
	var rest string
	if k, _ := fmt.Sscanf(msg, "yaml: line %d:", &n); k == 1 {
		line = n + lineOffset
		if i := bytes.IndexByte([]byte(msg), ':'); i >= 0 {
			rest = msg[i+1:]
			if j := bytes.IndexByte([]byte(rest), ':'); j >= 0 {
				rest = rest[j+1:]
			}
		}
		msg = "frontmatter: invalid YAML:" + rest
	} else {
		msg = "frontmatter: invalid YAML: " + msg
	}
	col := 0
	if line > 0 {
		col = 1
	}
	return &ParseError{Line: line, Column: col, Offset: -1, Rule: RuleFrontmatterSyntax, Err: ErrSyntax, Msg: msg}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}
