package skill

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
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

// Error formats the problem as line:column: message (or byte offset: message).
func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return e.Msg
}

// Unwrap returns the sentinel error that classifies the problem.
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
	yamlText, body, bodyLine, err := split(data)
	if err != nil {
		return nil, err
	}
	fm, err := parseFrontmatter(yamlText, 1)
	if err != nil {
		return nil, err
	}
	return &Document{Frontmatter: fm, Body: body, BodyLine: bodyLine}, nil
}

// split checks the encoding of a SKILL.md and returns the YAML text
// between its delimiter lines (which starts on line 2), and the body and
// the line it starts on.
func split(data []byte) (yamlText, body []byte, bodyLine int, err error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, nil, 0, &ParseError{Offset: int64(off), Rule: RuleEncoding, Err: ErrInvalidUTF8,
			Msg: fmt.Sprintf("invalid UTF-8 at byte offset %d; save the file as UTF-8", off)}
	}
	if off := bytes.IndexByte(data, 0); off >= 0 {
		return nil, nil, 0, &ParseError{Offset: int64(off), Rule: RuleEncoding, Err: ErrNUL,
			Msg: fmt.Sprintf("NUL byte at byte offset %d; SKILL.md must be text", off)}
	}
	text := bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))

	first, rest, _ := cutLine(text)
	if !isDelimiter(first) {
		return nil, nil, 0, &ParseError{Line: 1, Column: 1, Offset: -1, Rule: RuleFrontmatterMissing, Err: ErrNoFrontmatter,
			Msg: "frontmatter: missing; SKILL.md must start with a line \"---\", the YAML fields, and a closing \"---\""}
	}
	yamlStart := len(text) - len(rest)
	line := 2
	pos := yamlStart
	for {
		if pos-yamlStart > MaxFrontmatterBytes {
			return nil, nil, 0, &ParseError{Line: 2, Column: 1, Offset: -1, Rule: RuleFrontmatterSize, Err: ErrTooLarge,
				Msg: fmt.Sprintf("frontmatter: larger than %d bytes", MaxFrontmatterBytes)}
		}
		if pos >= len(text) {
			return nil, nil, 0, &ParseError{Line: 1, Column: 1, Offset: -1, Rule: RuleFrontmatterUnterminated, Err: ErrUnterminated,
				Msg: "frontmatter: opened on line 1 but never closed; add a line \"---\" after the last field"}
		}
		l, next, _ := cutLine(text[pos:])
		if isDelimiter(l) {
			return text[yamlStart:pos], next, line + 1, nil
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
	fm, err := parseYAML(text, text, lineOffset)
	var pe *ParseError
	if errors.As(err, &pe) && strings.Contains(pe.Msg, "invalid Unicode character escape") {
		// JSON-style surrogate pairs ("\ud83c\udfe6"), which go-yaml refuses
		// and other YAML parsers accept: read them as the character they encode.
		if joined, ok := joinSurrogates(text); ok {
			if fm, err2 := parseYAML(joined, text, lineOffset); err2 == nil {
				return fm, nil
			}
		}
	}
	return fm, err
}

// joinSurrogates rewrites each escaped UTF-16 surrogate pair "\uD83C\uDFE6"
// as the escape "\U0001F3E6" of the character it encodes. It reports
// whether it rewrote anything.
func joinSurrogates(text []byte) ([]byte, bool) {
	var out []byte
	backslashes := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && backslashes%2 == 0 && i+12 <= len(text) && text[i+1] == 'u' && text[i+6] == '\\' && text[i+7] == 'u' {
			hi, err1 := strconv.ParseUint(string(text[i+2:i+6]), 16, 16)
			lo, err2 := strconv.ParseUint(string(text[i+8:i+12]), 16, 16)
			if err1 == nil && err2 == nil && utf16.IsSurrogate(rune(hi)) && hi < 0xDC00 && lo >= 0xDC00 && lo < 0xE000 {
				if out == nil {
					out = append(make([]byte, 0, len(text)), text[:i]...)
				}
				out = fmt.Appendf(out, "\\U%08X", utf16.DecodeRune(rune(hi), rune(lo)))
				i += 11
				backslashes = 0
				continue
			}
		}
		if c == '\\' {
			backslashes++
		} else {
			backslashes = 0
		}
		if out != nil {
			out = append(out, c)
		}
	}
	return out, out != nil
}

// parseYAML parses text; orig is the text as written, which differs when
// surrogate escapes were joined: a scalar that is not double-quoted takes
// escapes literally, so if one of them shows the rewrite, the rewrite is
// refused.
func parseYAML(text, orig []byte, lineOffset int) (Frontmatter, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Frontmatter{}, &ParseError{Line: lineOffset, Column: 1, Offset: -1, Rule: RuleFrontmatterType, Err: ErrNotMapping,
				Msg: "frontmatter: empty; it must be a YAML mapping with at least name and description"}
		}
		return Frontmatter{}, syntaxError(err, text, lineOffset)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Frontmatter{}, &ParseError{Line: extra.Line + lineOffset, Column: extra.Column, Offset: -1, Rule: RuleFrontmatterSyntax, Err: ErrSyntax,
			Msg: "frontmatter: holds more than one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return Frontmatter{}, syntaxError(err, text, lineOffset)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return Frontmatter{}, &ParseError{Line: doc.Line + lineOffset, Column: doc.Column, Offset: -1, Rule: RuleFrontmatterType, Err: ErrNotMapping,
			Msg: fmt.Sprintf("frontmatter: is a YAML %s; it must be a mapping of fields such as \"name: my-skill\"", kindName(doc))}
	}
	c := converter{lineOffset: lineOffset, rewritten: len(text) != len(orig)}
	// The JSON is about as long as the YAML: one allocation, not a series
	// of doublings.
	c.buf.Grow(len(text) + 64)
	return c.frontmatter(doc)
}

// parserProblems are the go-yaml errors raised by its parser rather than
// its scanner: the parser reports a 0-based line where the scanner reports
// a 1-based one.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found undefined tag handle",
	"found incompatible YAML document",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
}

// syntaxError turns a go-yaml error into a ParseError at the file line and
// column of the problem, with advice on what to change. go-yaml reports
// only a line (0-based for parser errors, and none at all on the first
// line), so the column is found by looking at that line for what the
// problem names.
func syntaxError(err error, text []byte, lineOffset int) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1 // go-yaml omits the line when it is the first
	var n int
	if k, _ := fmt.Sscanf(msg, "line %d:", &n); k == 1 {
		msg = strings.TrimSpace(msg[strings.IndexByte(msg, ':')+1:])
		line = n
		if slices.Contains(parserProblems, msg) {
			line++
		}
	}
	lines := strings.Split(string(text), "\n")
	line = min(max(line, 1), max(len(lines), 1))
	if strings.HasPrefix(msg, "did not find expected ',' or ") {
		// Reported where the collection opened, or (on the first line)
		// where the text ended: go back to the opening bracket.
		for l := line; l >= 1; l-- {
			if strings.ContainsAny(lines[l-1], "[{") {
				line = l
				break
			}
		}
	}
	src := ""
	if line <= len(lines) {
		src = strings.TrimRight(lines[line-1], "\r")
	}
	col, advice := locate(src, msg)
	return &ParseError{Line: line + lineOffset, Column: col, Offset: -1, Rule: RuleFrontmatterSyntax, Err: ErrSyntax,
		Msg: "frontmatter: invalid YAML: " + msg + advice}
}

// locate finds the column (1-based, in characters) in src, a line of YAML,
// of the problem go-yaml reported, and says what to change.
func locate(src, problem string) (int, string) {
	col := func(i int) int { return utf8.RuneCountInString(src[:i]) + 1 }
	first := len(src) - len(strings.TrimLeft(src, " \t"))
	key, value, hasValue := "", "", false
	if i := mappingColon(src, 0); i >= 0 {
		key, value, hasValue = strings.TrimSpace(src[:i]), strings.TrimSpace(src[i+1:]), true
	}
	valueAt := func() int {
		i := mappingColon(src, 0) + 1
		return i + len(src[i:]) - len(strings.TrimLeft(src[i:], " \t"))
	}
	switch {
	case problem == "mapping values are not allowed in this context":
		if hasValue {
			if j := mappingColon(src, mappingColon(src, 0)+1); j >= 0 {
				return col(j), fmt.Sprintf("; a value holding \": \" must be quoted: %s: %q", key, value)
			}
		}
		return col(first), "; check the indentation: a field must start at the same column as the others"
	case strings.HasPrefix(problem, "did not find expected ',' or "):
		if i := strings.IndexAny(src, "[{"); i >= 0 {
			return col(i), "; a value starting with [ or { is a YAML list or mapping that must be closed on the same field; quote the value if it is text"
		}
	case problem == "did not find expected comment or line break":
		if hasValue && (strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">")) {
			return col(valueAt()), "; after | or > the text goes on the following lines, indented; or write the value on one line without |"
		}
	case problem == "found character that cannot start any token":
		if hasValue {
			return col(valueAt()), fmt.Sprintf("; quote the value: %s: %q", key, value)
		}
	case strings.HasPrefix(problem, "found a tab character"):
		if i := strings.IndexByte(src, '\t'); i >= 0 {
			return col(i), "; indent with spaces, not tabs"
		}
	case problem == "found invalid Unicode character escape code", problem == "found unknown escape character":
		if i := strings.IndexByte(src, '\\'); i >= 0 {
			return col(i), "; in double quotes a backslash starts an escape: write \\\\ for a backslash, or use single quotes"
		}
	case problem == "found unexpected end of stream":
		if i := strings.IndexAny(src, "\"'"); i >= 0 {
			return col(i), "; close the quoted value on its line, or write it without quotes"
		}
	}
	return col(first), ""
}

// mappingColon returns the index at or after from of the first ":" that
// ends a mapping key (followed by a blank or the end of the line), or -1.
func mappingColon(src string, from int) int {
	for i := from; i >= 0 && i < len(src); i++ {
		if src[i] == ':' && (i+1 == len(src) || src[i+1] == ' ' || src[i+1] == '\t') {
			return i
		}
	}
	return -1
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
