package skill

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Severity ranks a finding.
type Severity int

const (
	// Error findings make a skill invalid: it is not published.
	Error Severity = iota
	// Warning findings are reported; the skill is still valid.
	Warning
)

// String returns "error" or "warning", the words validate prints.
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalJSON renders the severity as "error" or "warning".
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Stable rule ids, one per check a SKILL.md can fail: their names say what
// is checked. Tools and editors may key on them; they never change meaning.
const (
	RuleEncoding                = "encoding" // UTF-8, no NUL
	RuleFrontmatterMissing      = "frontmatter-missing"
	RuleFrontmatterUnterminated = "frontmatter-unterminated"
	RuleFrontmatterType         = "frontmatter-type" // must be a mapping
	RuleFrontmatterSize         = "frontmatter-size"
	RuleFrontmatterSyntax       = "frontmatter-syntax" // YAML, aliases, tags, keys
	RuleFrontmatterDuplicate    = "frontmatter-duplicate"
	RuleNameMissing             = "name-missing"
	RuleNameType                = "name-type"
	RuleNameLength              = "name-length"
	RuleNameFormat              = "name-format"
	RuleNameDirectory           = "name-directory"
	RuleDescriptionMissing      = "description-missing"
	RuleDescriptionType         = "description-type"
	RuleDescriptionLength       = "description-length"
	RuleLicenseType             = "license-type"
	RuleCompatibilityType       = "compatibility-type"
	RuleCompatibilityLength     = "compatibility-length"
	RuleMetadataType            = "metadata-type"
	RuleMetadataReserved        = "metadata-reserved" // warning only
	RuleAllowedToolsType        = "allowed-tools-type"
	RuleUnknownField            = "unknown-field" // warning only
)

// Finding is one problem found in a SKILL.md.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Line     int      `json:"line"`   // 1-based line in SKILL.md, 0 if unknown
	Column   int      `json:"column"` // 1-based column, 0 if unknown
	Message  string   `json:"message"`
}

// String formats the finding as validate prints it: line:column: message (rule).
func (f Finding) String() string {
	return fmt.Sprintf("%d:%d: %s (%s)", f.Line, f.Column, f.Message, f.Rule)
}

// Limits of the Agent Skills specification.
const (
	MaxNameLength          = 64
	MaxDescriptionLength   = 1024
	MaxCompatibilityLength = 500
)

// nameFormat reports whether name has the form of a skill name: one or
// more runs of lowercase ASCII letters and digits, joined by single
// hyphens (the pattern ^[a-z0-9]+(?:-[a-z0-9]+)*$, checked byte by byte:
// every skill of a catalog and every entry a host receives is checked, and
// a regular expression was about 1% of building a catalog).
func nameFormat(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// knownFields are the frontmatter fields the Agent Skills specification defines.
var knownFields = []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

// ReservedMetadataPrefix marks metadata keys reserved for MCP extensions.
const ReservedMetadataPrefix = "io.modelcontextprotocol/"

// ValidName reports why name is not a valid skill name, or nil. Names are
// 1-64 characters of lowercase ASCII letters, digits and single hyphens, not
// at either end. (The specification's prose also mentions Unicode lowercase
// letters; a name published over MCP sits in a URI authority, so skillport
// keeps to ASCII.)
func ValidName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name is empty")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return fmt.Errorf("name %q is %d characters, the limit is %d", name, utf8.RuneCountInString(name), MaxNameLength)
	case !nameFormat(name):
		return fmt.Errorf("name %q must be lowercase letters a-z, digits and single hyphens, not starting or ending with a hyphen", name)
	}
	return nil
}

// ValidateOptions say how strictly [ValidateWith] applies the specification.
type ValidateOptions struct {
	// Dir is the name of the directory holding the SKILL.md, which the
	// name field should equal; "" skips that check.
	Dir string
	// Strict makes errors of the rules that real collections break while
	// hosts load their skills every day: metadata values that are not
	// strings (nested maps, lists, numbers, an empty metadata), allowed-tools
	// written as a YAML list, and a name that differs from its directory.
	// Without Strict these are warnings, and the frontmatter is served as
	// written, which SEP-2640 allows.
	Strict bool
}

// Validate checks a parsed SKILL.md strictly against the Agent Skills
// specification. dir is the name of the directory holding the SKILL.md; the
// name field must equal it. Pass "" to skip that check. Findings are sorted
// by position. It is ValidateWith with Strict set.
func Validate(doc *Document, dir string) []Finding {
	return ValidateWith(doc, &ValidateOptions{Dir: dir, Strict: true})
}

// ValidateWith checks a parsed SKILL.md against the Agent Skills
// specification, as strictly as opts say (nil: not strict, no directory).
// Findings are sorted by position.
func ValidateWith(doc *Document, opts *ValidateOptions) []Finding {
	var o ValidateOptions
	if opts != nil {
		o = *opts
	}
	dir := o.Dir
	lenient := Error
	if !o.Strict {
		lenient = Warning
	}
	fm := doc.Frontmatter
	var out []Finding
	addAt := func(rule string, sev Severity, line, col int, format string, args ...any) {
		if line == 0 {
			line, col = 1, 1
		}
		out = append(out, Finding{Rule: rule, Severity: sev, Line: line, Column: col, Message: fmt.Sprintf(format, args...)})
	}
	add := func(rule string, sev Severity, key string, format string, args ...any) {
		line, col := fm.Position(key)
		addAt(rule, sev, line, col, format, args...)
	}
	served := ""
	if !o.Strict {
		served = "; it is served as written (--strict refuses it)"
	}

	// name
	if v, ok := fm.Get("name"); !ok {
		add(RuleNameMissing, Error, "", "name: missing; add \"name: %s\"", suggestName(dir))
	} else if s, ok := v.(string); !ok {
		add(RuleNameType, Error, "name", "name: must be a string, found %s", jsonType(v))
	} else if n := utf8.RuneCountInString(s); n == 0 || n > MaxNameLength {
		add(RuleNameLength, Error, "name", "name: %d characters, it must be 1 to %d", n, MaxNameLength)
	} else if !nameFormat(s) {
		add(RuleNameFormat, Error, "name", "name %q: use lowercase letters a-z, digits and single hyphens, not at either end (try %q)", s, suggestName(s))
	} else if dir != "" && s != dir {
		if o.Strict {
			add(RuleNameDirectory, Error, "name", "name %q must equal its directory name %q; rename the folder or the name", s, dir)
		} else {
			add(RuleNameDirectory, Warning, "name", "name %q differs from its folder name %q: the skill is published under its name; rename the folder for hosts that load from disk", s, dir)
		}
	}

	// description
	if v, ok := fm.Get("description"); !ok {
		add(RuleDescriptionMissing, Error, "", "description: missing; say what the skill does and when to use it")
	} else if s, ok := v.(string); !ok {
		add(RuleDescriptionType, Error, "description", "description: must be a string, found %s", jsonType(v))
	} else if strings.TrimSpace(s) == "" {
		add(RuleDescriptionLength, Error, "description", "description: empty; say what the skill does and when to use it")
	} else if n := utf8.RuneCountInString(s); n > MaxDescriptionLength {
		add(RuleDescriptionLength, Error, "description", "description: %d characters, the limit is %d", n, MaxDescriptionLength)
	}

	// license
	if v, ok := fm.Get("license"); ok {
		if _, ok := v.(string); !ok {
			add(RuleLicenseType, Error, "license", "license: must be a string such as \"Apache-2.0\", found %s", jsonType(v))
		}
	}

	// compatibility
	if v, ok := fm.Get("compatibility"); ok {
		if s, ok := v.(string); !ok {
			add(RuleCompatibilityType, Error, "compatibility", "compatibility: must be a string, found %s", jsonType(v))
		} else if n := utf8.RuneCountInString(s); n == 0 || n > MaxCompatibilityLength {
			add(RuleCompatibilityLength, Error, "compatibility", "compatibility: %d characters, it must be 1 to %d", n, MaxCompatibilityLength)
		}
	}

	// metadata
	if v, ok := fm.Get("metadata"); ok {
		if m, ok := v.(map[string]any); !ok {
			add(RuleMetadataType, lenient, "metadata", "metadata: should be a mapping of string keys to string values, found %s%s", jsonType(v), served)
		} else {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				line, col := fm.memberPosition("metadata", k)
				if _, ok := m[k].(string); !ok {
					advice := "; quote it"
					if _, isMap := m[k].(map[string]any); isMap || o.Strict {
						advice = ""
					}
					addAt(RuleMetadataType, lenient, line, col, "metadata.%s: values should be strings, found %s%s%s", k, jsonType(m[k]), advice, served)
				}
				if strings.HasPrefix(k, ReservedMetadataPrefix) {
					addAt(RuleMetadataReserved, Warning, line, col, "metadata.%s: keys starting with %q are reserved for MCP extensions", k, ReservedMetadataPrefix)
				}
			}
		}
	}

	// allowed-tools
	if v, ok := fm.Get("allowed-tools"); ok {
		if _, ok := v.(string); !ok {
			sev := Error
			if list, ok := v.([]any); ok && !slices.ContainsFunc(list, func(e any) bool { _, s := e.(string); return !s }) {
				sev = lenient // a list of tool names: hosts read it
			}
			note := ""
			if sev == Warning {
				note = served
			}
			add(RuleAllowedToolsType, sev, "allowed-tools", "allowed-tools: should be a space-separated string such as \"Bash(git:*) Read\", found %s%s", jsonType(v), note)
		}
	}

	// unknown fields pass through
	for _, k := range fm.keys {
		if !slices.Contains(knownFields, k) {
			add(RuleUnknownField, Warning, k, "%s: not a field of the Agent Skills specification; it is passed through as written", k)
		}
	}

	slices.SortStableFunc(out, func(a, b Finding) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return out
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error })
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// suggestName turns s into the closest valid name, for messages.
func suggestName(s string) string {
	if out := Slug(s, MaxNameLength); out != "" {
		return out
	}
	return "my-skill"
}

// Slug turns s into lowercase ASCII letters and digits joined by single
// hyphens, at most max bytes, with no hyphen at either end; it may be
// empty. It makes a valid skill name, or origin label, out of free text.
func Slug(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	return out
}
