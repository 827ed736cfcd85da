package scan

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// invisible names the characters that hide text from a reviewer but not
// from a model: bidi embeddings, overrides and isolates (which reorder
// what is shown), zero-width characters, and Unicode tag characters
// (which spell ASCII invisibly). "" for any other rune.
func invisible(r rune) string {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return "bidi control"
	case r == 0x200B, r == 0x200C, r == 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E:
		return "zero-width character"
	case r >= 0xE0000 && r <= 0xE007F:
		return "Unicode tag character"
	}
	return ""
}

// hiddenUnicode reports invisible characters, once per line. Two uses are
// legitimate and skipped: a byte order mark at the start of the file, and
// the joiners and tags that build emoji (a zero-width joiner between two
// pictographs, tag characters after a black flag).
func hiddenUnicode(f File) []Finding {
	data := f.Data
	var out []Finding
	lastLine := 0
	for i := 0; i < len(data); {
		// Every rune the rule looks for starts with one of these bytes:
		// the rest of the file is skipped at memchr speed.
		j := indexAnyByte(data[i:], 0xE1, 0xE2, 0xEF, 0xF3)
		if j < 0 {
			break
		}
		i += j
		r, size := utf8.DecodeRune(data[i:])
		kind := invisible(r)
		if kind == "" || legitInvisible(data, i, r, size) {
			i += size
			continue
		}
		if line := lineAt(data, i); line != lastLine {
			lastLine = line
			msg := fmt.Sprintf("%s U+%04X hides text from a reviewer (%q); remove it", kind, r, excerpt(around(data, i)))
			if kind == "Unicode tag character" {
				msg = fmt.Sprintf("Unicode tag characters spell invisible text %q; remove them", decodeTags(data[i:]))
			}
			out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleHiddenUnicode, Level: LevelError, File: f.Path, Line: line, Message: msg})
			if len(out) >= maxFindingsPerRule {
				break
			}
		}
		i += size
	}
	return out
}

func indexAnyByte(b []byte, c ...byte) int {
	best := -1
	for _, x := range c {
		limit := b
		if best >= 0 {
			limit = b[:best]
		}
		if k := bytes.IndexByte(limit, x); k >= 0 {
			best = k
		}
	}
	return best
}

func legitInvisible(data []byte, i int, r rune, size int) bool {
	switch {
	case r == 0xFEFF && i == 0:
		return true
	case r == 0x200D, r == 0xFE0F:
		prev, _ := utf8.DecodeLastRune(data[:i])
		if prev == 0xFE0F { // a variation selector before the joiner
			prev, _ = utf8.DecodeLastRune(data[:i-3])
		}
		next, _ := utf8.DecodeRune(data[i+size:])
		return pictograph(prev) && pictograph(next) || joinsLetters(prev, next)
	case r == 0x200C:
		prev, _ := utf8.DecodeLastRune(data[:i])
		next, _ := utf8.DecodeRune(data[i+size:])
		return joinsLetters(prev, next)
	case r >= 0xE0000 && r <= 0xE007F:
		// A subdivision flag: U+1F3F4, tags, U+E007F.
		j := i
		for j >= 4 {
			p, n := utf8.DecodeLastRune(data[:j])
			if p == 0x1F3F4 {
				return true
			}
			if p < 0xE0000 || p > 0xE007F {
				return false
			}
			j -= n
		}
	}
	return false
}

// joinsLetters reports whether a joiner between a and b shapes a script
// that needs it (Persian, the Indic scripts): letters beyond ASCII.
func joinsLetters(a, b rune) bool {
	return a > 0x7f && b > 0x7f && (unicode.IsLetter(a) || unicode.IsMark(a)) && (unicode.IsLetter(b) || unicode.IsMark(b))
}

func pictograph(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF || r == 0x2640 || r == 0x2642 || r == 0x2695 || r == 0x2708 || r == 0x2764
}

// around is the line holding offset i.
func around(data []byte, i int) []byte {
	s := bytes.LastIndexByte(data[:i], '\n') + 1
	e := bytes.IndexByte(data[i:], '\n')
	if e < 0 {
		e = len(data) - i
	}
	return data[s : i+e]
}

// decodeTags reads the ASCII a run of tag characters spells.
func decodeTags(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 && sb.Len() < maxMessageExcerptLn {
		r, n := utf8.DecodeRune(b)
		if r < 0xE0000 || r > 0xE007F {
			break
		}
		if c := r - 0xE0000; c >= 0x20 && c < 0x7f {
			sb.WriteRune(c)
		}
		b = b[n:]
	}
	return sb.String()
}

// commentWords are what an instruction to a model is made of; a comment
// holding two of them (and long enough to be a sentence) is reported.
var commentWords = regexp.MustCompile(`(?i)\b(ignore|disregard|instructions?|assistant|system prompt|you (must|should|will|are)|do not (tell|mention|show|reveal)|never (tell|mention|reveal)|always|execute|run|send|upload|exfiltrate|curl|secret|token|password|credentials?|forget|pretend|the user)\b`)

var htmlComment = regexp.MustCompile(`(?s)<!--(.*?)-->`)

// htmlComments reports HTML comments that read like instructions: a
// renderer hides them, a model reads them.
func htmlComments(f File) []Finding {
	if !bytes.Contains(f.Data, []byte("<!--")) {
		return nil
	}
	var out []Finding
	for _, m := range htmlComment.FindAllSubmatchIndex(f.Data, -1) {
		body := f.Data[m[2]:m[3]]
		if len(bytes.Fields(body)) < 5 {
			continue // a marker such as <!-- TODO --> or <!-- prettier-ignore -->
		}
		words := map[string]bool{}
		for _, w := range commentWords.FindAll(body, -1) {
			words[strings.ToLower(string(w))] = true
		}
		if len(words) < 2 {
			continue
		}
		out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleCommentHidden, Level: LevelWarning, File: f.Path, Line: lineAt(f.Data, m[0]),
			Message: fmt.Sprintf("an HTML comment, hidden when rendered, reads like instructions to the model (%q); say it in visible text or remove it", excerpt(body))})
		if len(out) >= maxFindingsPerRule {
			break
		}
	}
	return out
}

// downloadExecTriggers must occur for any downloadExec pattern to match.
var downloadExecTriggers = [][]byte{[]byte("curl"), []byte("wget"), []byte("iwr"), []byte("irm"), []byte("Invoke-"), []byte("base64"), []byte("b64decode"), []byte("FromBase64")}

var downloadExecPatterns = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)\b(curl|wget)\b[^\n|;]*\|\s*(sudo\s+)?(env\s+)?(ba|z|k|da|fi)?sh\b`), "pipes a download into a shell"},
	{regexp.MustCompile(`(?i)\b(curl|wget)\b[^\n|;]*\|\s*(sudo\s+)?(python[0-9.]*|perl|ruby|node|php)\b`), "pipes a download into an interpreter"},
	{regexp.MustCompile(`(?i)\b(ba|z)?sh\s+(-c\s+)?["']?\s*<\(\s*(curl|wget)\b`), "runs a downloaded script through process substitution"},
	{regexp.MustCompile(`(?i)\beval\s+["']?\$\(\s*(curl|wget)\b`), "evaluates a download"},
	{regexp.MustCompile(`(?i)\b(iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]*\|\s*(iex|Invoke-Expression)\b`), "pipes a download into Invoke-Expression"},
	{regexp.MustCompile(`(?i)\b(iex|Invoke-Expression)\b\s*\(?\s*\(?\s*(iwr|irm|Invoke-WebRequest|Invoke-RestMethod|New-Object\s+Net\.WebClient)`), "runs a download with Invoke-Expression"},
	{regexp.MustCompile(`(?i)\bbase64\s+(-d|--decode|-D)\b[^\n;]*\|\s*(sudo\s+)?((ba|z|k|da)?sh|python[0-9.]*|perl)\b`), "decodes base64 into a shell"},
	{regexp.MustCompile(`(?i)\b(exec|eval)\s*\(\s*(base64\.)?b64decode\(`), "executes decoded base64"},
	{regexp.MustCompile(`(?i)\b(iex|Invoke-Expression)\b[^\n]*FromBase64String`), "executes decoded base64"},
}

// downloadExec reports commands that fetch code and run it unseen.
func downloadExec(f File) []Finding {
	if !containsAny(f.Data, downloadExecTriggers) {
		return nil
	}
	var out []Finding
	for _, p := range downloadExecPatterns {
		for _, m := range p.re.FindAllIndex(f.Data, maxFindingsPerRule) {
			out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleDownloadExec, Level: LevelError, File: f.Path, Line: lineAt(f.Data, m[0]),
				Message: fmt.Sprintf("%s (%q): what runs is not what was reviewed; ship the script in the skill instead", p.what, excerpt(f.Data[m[0]:m[1]]))})
		}
	}
	return dedupLines(out)
}

var selfModifyTriggers = [][]byte{[]byte("KILL.md"), []byte("kill.md"), []byte("his skill"), []byte("our own")}

var selfModifyPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(edit|modify|update|overwrite|rewrite|append (to|a line to)|write (to|into)|replace|change|patch|delete|remove)\b[^.\n]{0,40}\b(this skill'?s? (own )?(files?|instructions)|(this|the|your) (own )?SKILL\.md|your own (instructions|skill|files))`),
	regexp.MustCompile(`(>>?|\btee(\s+-a)?)\s*["']?[^\s"'|;&]*SKILL\.md\b`),
	regexp.MustCompile(`\bsed\s+(-[a-zA-Z]*i[a-zA-Z]*|--in-place)\b[^\n]*SKILL\.md\b`),
}

// selfModify reports instructions to change the skill's own files: a
// skill that rewrites itself runs what nobody reviewed next time. The
// patterns run only on the text around what they must name (SKILL.md,
// this skill, your own): tried at every position of every file they
// were most of the scanner's time.
func selfModify(f File) []Finding {
	if !containsAny(f.Data, selfModifyTriggers) {
		return nil
	}
	lower := asciiLower(f.Data)
	var out []Finding
	done := map[int]bool{} // window starts already tried
	for _, anchor := range selfModifyAnchors {
		for off := 0; len(out) < maxFindingsPerRule; {
			i := bytes.Index(lower[off:], anchor)
			if i < 0 {
				break
			}
			i += off
			off = i + len(anchor)
			s := max(bytes.LastIndexByte(f.Data[:i], '\n')+1, i-200)
			e := len(f.Data)
			if j := bytes.IndexByte(f.Data[i:], '\n'); j >= 0 {
				e = i + j
			}
			e = min(e, i+200)
			if done[s] {
				continue
			}
			done[s] = true
			for _, re := range selfModifyPatterns {
				if m := re.FindIndex(f.Data[s:e]); m != nil {
					out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleSelfModify, Level: LevelWarning, File: f.Path, Line: lineAt(f.Data, s+m[0]),
						Message: fmt.Sprintf("tells the agent to modify the skill's own files (%q); a skill must not rewrite what was reviewed", excerpt(f.Data[s+m[0]:s+m[1]]))})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Line - b.Line })
	return dedupLines(out)
}

var selfModifyAnchors = [][]byte{[]byte("skill.md"), []byte("this skill"), []byte("your own")}

// asciiLower lowers ASCII letters only, keeping every offset.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

var secretPatterns = []struct {
	gate    byte // a byte every match holds
	trigger string
	re      *regexp.Regexp
	what    string
}{
	{'-', "PRIVATE KEY", regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|PGP|ENCRYPTED) )?PRIVATE KEY( BLOCK)?-----\s*[A-Za-z0-9+/=:\n\r -]{40,}`), "a private key"},
	{'A', "AKIA", regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), "an AWS access key id"},
	{'A', "ASIA", regexp.MustCompile(`\bASIA[0-9A-Z]{16}\b`), "an AWS temporary access key id"},
	{'_', "gh", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`), "a GitHub token"},
	{'_', "github_pat_", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{60,}\b`), "a GitHub fine-grained token"},
	{'-', "xox", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{20,}\b`), "a Slack token"},
	{'-', "sk-", regexp.MustCompile(`\bsk-(ant-|proj-)?[A-Za-z0-9_-]{32,}\b`), "an API secret key"},
}

// assignment is a name that says secret, assigned a literal value.
var assignment = regexp.MustCompile(`(?i)\b([a-z0-9_.-]*(secret|token|passw(or)?d|api[_-]?key|access[_-]?key|private[_-]?key|auth)[a-z0-9_.-]*)["']?\s*[:=]\s*["']?([A-Za-z0-9+/_=.\-]{20,200})`)

// secrets reports credentials by pattern, and assignments of high-entropy
// literals to names that say secret. The latter is where false positives
// live, so it asks for length, entropy, a mix of letters and digits, and
// no placeholder words.
func secrets(f File, seen *[256]bool) []Finding {
	var out []Finding
	for _, p := range secretPatterns {
		if !seen[p.gate] || !bytes.Contains(f.Data, []byte(p.trigger)) {
			continue
		}
		for _, m := range p.re.FindAllIndex(f.Data, maxFindingsPerRule) {
			out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleSecret, Level: LevelError, File: f.Path, Line: lineAt(f.Data, m[0]),
				Message: fmt.Sprintf("holds %s (%s); remove it from the skill and revoke it", p.what, redactSecret(f.Data[m[0]:m[1]]))})
		}
	}
	if (seen['='] || seen[':']) && mentionsSecret(f.Data) {
		for _, m := range assignment.FindAllSubmatchIndex(f.Data, maxFindingsPerRule) {
			v := f.Data[m[8]:m[9]]
			if !likelySecret(v) {
				continue
			}
			out = append(out, Finding{Scanner: BuiltinScannerName, RuleID: RuleSecret, Level: LevelError, File: f.Path, Line: lineAt(f.Data, m[0]),
				Message: fmt.Sprintf("assigns a high-entropy literal to %s (%s); move secrets out of the skill and revoke this one", f.Data[m[2]:m[3]], redactSecret(v))})
		}
	}
	return dedupLines(out)
}

// secretWords are what a name that says secret holds, lower case: the
// assignment pattern runs only on text holding one, since trying it at
// every position of every file is most of the scanner's time.
var secretWords = [][]byte{[]byte("secret"), []byte("token"), []byte("passw"), []byte("key"), []byte("auth")}

func mentionsSecret(data []byte) bool {
	for i := 0; i < len(data); i++ {
		c := data[i] | 0x20 // ASCII lower case; other bytes never match
		for _, w := range secretWords {
			if c == w[0] && len(data)-i >= len(w) && asciiFoldEq(data[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

func asciiFoldEq(b, lower []byte) bool {
	for i := range lower {
		if b[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// redactSecret keeps enough of a secret to find it, never all of it.
func redactSecret(b []byte) string {
	s := string(b)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 12 {
		return s[:min(6, len(s)/4)] + "…"
	}
	return "…"
}

var placeholders = []string{"example", "your", "xxxx", "changeme", "placeholder", "dummy", "sample", "redacted", "0000", "1234", "abcd", "test", "fake"}

func likelySecret(v []byte) bool {
	lower := strings.ToLower(string(v))
	for _, p := range placeholders {
		if strings.Contains(lower, p) {
			return false
		}
	}
	var letters, digits bool
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters = true
		}
	}
	return letters && digits && entropy(v) >= 4.0
}

// entropy is the Shannon entropy of b in bits per byte.
func entropy(b []byte) float64 {
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	var h float64
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(b))
			h -= p * math.Log2(p)
		}
	}
	return h
}

func containsAny(data []byte, words [][]byte) bool {
	for _, w := range words {
		if bytes.Contains(data, w) {
			return true
		}
	}
	return false
}

// dedupLines keeps the first finding of each file line: two patterns
// matching one command are one finding.
func dedupLines(fs []Finding) []Finding {
	if len(fs) < 2 {
		return fs
	}
	seen := map[int]bool{}
	out := fs[:0]
	for _, f := range fs {
		if !seen[f.Line] {
			seen[f.Line] = true
			out = append(out, f)
		}
	}
	return out
}
