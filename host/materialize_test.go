package host

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Names real users give their files are accepted, in the scripts of the
// allowlist, precomposed (NFC) as every common editor and OS writes them.
func TestCheckNameAccepts(t *testing.T) {
	for _, name := range []string{
		"SKILL.md", "run.sh", "a b (1)~.txt",
		"café.md", "Ærø-straße.md", "Привет.md", "Ёлка.md", "日本語.md", "ジョン・スミス.md", "人々.md",
		"한국어.md", "Ελληνικά.md", "ΐ.md", "tiếng-việt.md", "שלום.md", "مرحبا.md", "آب.md",
		"فارسی-۱۲۳.md", "٠١٢.md", "ǖ.md", "Ǆ.md",
	} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v; want accepted", name, err)
		}
	}
}

// A name is refused when it holds a rune whose normalisation we cannot
// decide; the error names the rune and its position.
func TestCheckNameRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"cafe\u0301.md", "U+0301 at character 5, a combining mark"},
		{"\u212Bngstrom.md", "U+212B at character 1"},              // Angstrom sign, a singleton
		{"\u212Aelvin.md", "U+212A at character 1"},                // Kelvin sign
		{"\u2126.md", "U+2126 at character 1"},                     // Ohm sign
		{"\uFB1D.md", "U+FB1D at character 1"},                     // Hebrew presentation form, excluded
		{"\u05D0\u05B8.md", "U+05B8 at character 2, a combining"},  // Hebrew point
		{"\u1100\u1161.md", "U+1100 at character 1, a conjoining"}, // jamo that NFC makes 가
		{"ab\u202Egpj.md", "U+202E at character 3, an invisible"},  // right-to-left override
		{"a\u200Bb.md", "U+200B at character 2, an invisible"},     // zero-width space
		{"\u2066x.md", "U+2066 at character 1, an invisible"},
		{"\uF900.md", "U+F900 at character 1"},      // CJK compatibility ideograph
		{"\U0002F800.md", "U+2F800 at character 1"}, // CJK compatibility supplement
		{"\u1F71.md", "U+1F71 at character 1"},      // Greek Extended, canonical singleton
		{"\u0387.md", "U+0387 at character 1"},      // Greek ano teleia, singleton
		{"\u0374.md", "U+0374 at character 1"},      // Greek numeral sign, singleton
		{"\uE000.md", "U+E000 at character 1, a private"},
		{"\uFF21.md", "U+FF21 at character 1"}, // fullwidth A
		{"\u00B5.md", "U+00B5 at character 1"}, // micro sign, folds to μ
		{"caf\xe9.md", "byte 0xe9 at character 4, which is not valid UTF-8"},
		{"a:b", `U+003A ':' at character 2, which Windows`},
		{"a\x01b", "U+0001 at character 2, a control"},
	} {
		err := checkName(tc.name)
		if !errors.Is(err, ErrUnsafeName) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkName(%q) = %v; want ErrUnsafeName mentioning %q", tc.name, err, tc.want)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\u202E\u200B\u2066\x01") {
			t.Errorf("checkName(%q) echoes an invisible character raw: %q", tc.name, err)
		}
	}
}

// The runes the allowlist must never contain, block by block.
func TestAllowlistExcludes(t *testing.T) {
	blocks := []struct {
		lo, hi rune
		what   string
	}{
		{0x0300, 0x036F, "combining diacritical marks"},
		{0x0483, 0x0489, "Cyrillic combining marks"},
		{0x0591, 0x05CF, "Hebrew points"},
		{0x064B, 0x065F, "Arabic harakat"},
		{0x1100, 0x11FF, "Hangul conjoining jamo"},
		{0x1F00, 0x1FFF, "Greek Extended"},
		{0x200B, 0x200F, "zero-width and direction marks"},
		{0x202A, 0x202E, "bidi embeddings and overrides"},
		{0x2066, 0x2069, "bidi isolates"},
		{0x2126, 0x2126, "Ohm sign"},
		{0x212A, 0x212B, "Kelvin and Angstrom signs"},
		{0x3099, 0x309C, "kana voicing marks"},
		{0xA960, 0xA97F, "Hangul jamo extended-A"},
		{0xD7B0, 0xD7FF, "Hangul jamo extended-B"},
		{0xE000, 0xF8FF, "private use"},
		{0xF900, 0xFAFF, "CJK compatibility ideographs"},
		{0xFB1D, 0xFB4F, "Hebrew presentation forms"},
		{0xFE00, 0xFE0F, "variation selectors"},
		{0x2F800, 0x2FA1F, "CJK compatibility ideographs supplement"},
		{0xE0000, 0xE007F, "tag characters"},
	}
	for _, b := range blocks {
		for r := b.lo; r <= b.hi; r++ {
			if nameRuneOK(r) {
				t.Errorf("%U (%s) accepted", r, b.what)
			}
		}
	}
	for _, r := range []rune{0x00D7, 0x00F7, 0x0374, 0x037E, 0x0387, 0x30A0} {
		if nameRuneOK(r) {
			t.Errorf("%U accepted", r)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if nameRuneOK(r) && (unicode.In(r, unicode.M, unicode.C, unicode.Z) && r != ' ') {
			t.Errorf("%U is a mark, control, format or separator, yet accepted", r)
		}
	}
}

// Every accepted rune folds like its upper, lower and title case, so
// FoldName catches what a case-insensitive volume would merge.
func TestFoldNameCoversCaseMappings(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !nameRuneOK(r) {
			continue
		}
		k := FoldName(string(r))
		for _, m := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)} {
			if FoldName(string(m)) != k {
				t.Errorf("FoldName(%U) = %q but FoldName(%U) = %q", r, k, m, FoldName(string(m)))
			}
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if FoldName(string(f)) != k {
				t.Errorf("FoldName(%U) = %q but its fold %U gives %q", r, k, f, FoldName(string(f)))
			}
		}
	}
}

func TestFoldNameCollisions(t *testing.T) {
	for _, tc := range []struct {
		a, b    string
		collide bool
	}{
		{"SKILL.md", "skill.md", true},
		{"SKILL.md", "Skill.MD", true},
		{"Café.md", "CAFÉ.md", true},
		{"café.md", "cafe.md", false},
		{"straße.md", "STRASSE.md", true},
		{"straße.md", "strasse.md", true},
		{"STRAẞE.md", "strasse.md", true},
		{"σ.md", "ς.md", true},
		{"Σ.md", "ς.md", true},
		{"ΟΔΟΣ.md", "οδος.md", true},
		{"İstanbul.md", "istanbul.md", true},
		{"ıı.md", "II.md", true},
		{"ſ.md", "S.md", true},
		{"Ёлка.md", "ёЛКА.md", true},
		{"ǅ.md", "ǆ.md", true},
		{"日本.md", "日本.md", true},
		{"日本.md", "本日.md", false},
		{"a/b.md", "A/B.MD", true},
		{"a.md", "b.md", false},
	} {
		if got := FoldName(tc.a) == FoldName(tc.b); got != tc.collide {
			t.Errorf("FoldName(%q) = %q, FoldName(%q) = %q; collide = %v, want %v", tc.a, FoldName(tc.a), tc.b, FoldName(tc.b), got, tc.collide)
		}
	}
}

// FuzzFoldName checks the name rule on arbitrary strings: it never panics,
// accepts only valid UTF-8 made of allowlisted runes, and folds every
// accepted name to the same key as its upper- and lower-case forms.
func FuzzFoldName(f *testing.F) {
	for _, s := range []string{"SKILL.md", "café.md", "cafe\u0301.md", "straße", "ΣΊΣΥΦΟΣ", "İı", "日本語", "한국어", "\xff", "\u202E", "ǅ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := FoldName(s)
		if FoldName(k) != k {
			t.Fatalf("FoldName not idempotent on %q: %q, then %q", s, k, FoldName(k))
		}
		err := checkName(s)
		if err != nil {
			if !errors.Is(err, ErrUnsafeName) {
				t.Fatalf("checkName(%q) = %v; not ErrUnsafeName", s, err)
			}
			return
		}
		if !utf8.ValidString(s) {
			t.Fatalf("accepted invalid UTF-8 %q", s)
		}
		for _, r := range s {
			if !nameRuneOK(r) || unicode.Is(unicode.M, r) {
				t.Fatalf("accepted %q holding %U", s, r)
			}
		}
		for _, v := range []string{strings.ToUpper(s), strings.ToLower(s), strings.ToTitle(s)} {
			if FoldName(v) != k {
				t.Fatalf("FoldName(%q) = %q but FoldName(%q) = %q", s, k, v, FoldName(v))
			}
		}
	})
}

// pathURI percent-encodes each segment of a relative path as a server would.
func pathURI(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// A skill whose supporting files have non-ASCII names is pulled, each file
// written byte for byte under its decoded name.
func TestMaterializeNonASCIINames(t *testing.T) {
	want := map[string]string{
		"references/café.md":        "# café\n",
		"references/Привет.md":      "Привет, мир\n",
		"日本語/説明.md":                 "日本語のテキスト\n",
		"한국어.md":                    "안녕하세요\n",
		"Ελληνικά.md":               "καλημέρα\n",
		"tiếng-việt.md":             "xin chào\n",
		"assets/straße-plan.txt":    "Straße\r\nno trailing newline",
		"scripts/ジョン・スミス.sh":        "#!/bin/sh\necho ok\n",
		"references/مرحبا/فارسی.md": "سلام\n",
	}
	extra := map[string]string{}
	for p, c := range want {
		extra[pathURI(p)] = c
	}
	e, files := fetchedSkill(t, "acme/intl", extra)
	out, err := Materialize(t.TempDir(), e, files, nil)
	if err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	for p, c := range want {
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p)))
		if err != nil || string(got) != c {
			t.Errorf("%s = %q, %v; want %q", p, got, err, c)
		}
		// MCP carries no mode: a file starting with "#!" is made
		// executable (scripts a SKILL.md says to run), the others not.
		fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(p)))
		if err != nil || (fi.Mode().Perm()&0o100 != 0) != strings.HasPrefix(c, "#!") {
			t.Errorf("%s: mode %v, %v", p, fi.Mode(), err)
		}
	}
}

// Refused or colliding names fail the whole skill, with the sentinel, the
// URI and the rune in the message, and nothing is written.
func TestMaterializeRefusesUnsafeNames(t *testing.T) {
	for _, tc := range []struct {
		files    []string
		sentinel error
		want     []string
	}{
		{[]string{"cafe\u0301.md"}, ErrUnsafeName, []string{"skill://x/cafe%CC%81.md", "U+0301 at character 5", "rename"}},
		{[]string{"refs/\u212Bngstr\u00F6m.md"}, ErrUnsafeName, []string{"skill://x/refs/%E2%84%ABngstr%C3%B6m.md", "U+212B at character 1"}},
		{[]string{"\u1100\u1161.md"}, ErrUnsafeName, []string{"U+1100"}},
		{[]string{"\uF900.md"}, ErrUnsafeName, []string{"U+F900"}},
		{[]string{"x\u202Etxt.md"}, ErrUnsafeName, []string{"U+202E at character 2"}},
		{[]string{"Café.md", "CAFÉ.md"}, ErrNameCollision, []string{"case-insensitive"}},
		{[]string{"straße.md", "STRASSE.md"}, ErrNameCollision, []string{"case-insensitive"}},
		{[]string{"σ.md", "ς.md"}, ErrNameCollision, []string{"case-insensitive"}},
		{[]string{"İ.md", "i.md"}, ErrNameCollision, []string{"case-insensitive"}},
		{[]string{"skill.md"}, ErrNameCollision, []string{`"SKILL.md"`, `"skill.md"`}},
		{[]string{"Ref.md", "ref.md/x.md"}, ErrNameCollision, []string{"directory"}},
	} {
		t.Run(tc.files[0], func(t *testing.T) {
			extra := map[string]string{}
			for _, p := range tc.files {
				extra[pathURI(p)] = "content of " + p
			}
			e, files := fetchedSkill(t, "x", extra)
			dir := t.TempDir()
			_, err := Materialize(dir, e, files, nil)
			if !errors.Is(err, ErrMaterialize) || !errors.Is(err, tc.sentinel) {
				t.Fatalf("Materialize = %v; want ErrMaterialize and %v", err, tc.sentinel)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("refused pull left %v", entries)
			}
		})
	}
}

func TestMaterializeRefusesUnsafeSkillName(t *testing.T) {
	// A skill name in NFD: the entry is registered with a naming warning,
	// but its folder name cannot be written safely.
	name := "cafe\u0301"
	uri := "skill://acme/" + url.PathEscape(name) + "/SKILL.md"
	f := newFake("docs")
	f.files[uri] = skillMD(name, "d")
	f.entries = append(f.entries, f.entryFor(uri, map[string]any{"name": name, "description": "d"}))
	h := connect(t, nil, Origin{Label: "docs", Transport: f.transport(t)})
	var e *Entry
	for _, s := range h.Skills() {
		if s.URI == uri {
			e = s
		}
	}
	if e == nil {
		t.Fatalf("skill not registered: %v", names(h.Skills()))
	}
	files, err := h.FetchAll(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = Materialize(dir, e, files, nil)
	if !errors.Is(err, ErrUnsafeName) || !strings.Contains(err.Error(), "skill folder name") {
		t.Fatalf("Materialize = %v; want ErrUnsafeName for the folder name", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused pull left %v", entries)
	}
}

func ExampleFoldName() {
	fmt.Println(FoldName("Straße/Café.md") == FoldName("STRASSE/café.MD"))
	// Output: true
}

// fetchedSkill serves one skill at path with the extra files (URI-relative
// path to content) from a fake server and returns its entry and verified
// files, ready to materialise.
func fetchedSkill(t *testing.T, path string, extra map[string]string) (*Entry, []*File) {
	t.Helper()
	f := newFake("docs")
	f.addSkill(path, "d", extra)
	h := connect(t, nil, Origin{Label: "docs", Transport: f.transport(t)})
	name := path[strings.LastIndex(path, "/")+1:]
	e, err := h.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	files, err := h.FetchAll(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return e, files
}

func TestMaterializeRefusesNonPortableNames(t *testing.T) {
	for _, tc := range []struct{ file, rule string }{
		{"CON/x.md", "Windows device name CON"},
		{"nul", "Windows device name NUL"},
		{"aux/readme", "device name AUX"},
		{"PRN", "device name PRN"},
		{"COM1.txt", "device name COM1"},
		{"lpt1", "device name LPT1"},
		{"Lpt9.tar.gz", "device name LPT9"},
		{"com0", "device name COM0"},
		{"con%20.txt", "device name CON"},
		{"x./a.md", "ends with a dot or a space"},
		{"a.md.", "ends with a dot or a space"},
		{"b.md%20", "ends with a dot or a space"},
		{".git/config", "git's repository folder"},
		{".GIT/hooks/x", "git's repository folder"},
		{"GIT~1/config", "git's repository folder"},
	} {
		e, files := fetchedSkill(t, "x", map[string]string{tc.file: "data"})
		dir := t.TempDir()
		_, err := Materialize(dir, e, files, nil)
		if !errors.Is(err, ErrUnsafeName) || !strings.Contains(err.Error(), tc.rule) || !strings.Contains(err.Error(), strings.Split(tc.file, "/")[0][:2]) {
			t.Errorf("%q: %v; want a refusal naming %q", tc.file, err, tc.rule)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%q: wrote %v", tc.file, entries)
		}
	}
	// Names that merely contain a device name are fine.
	e, files := fetchedSkill(t, "x", map[string]string{"console.md": "a", "auxiliary/x": "b", "com10": "c", "nul-device.md": "d", ".github/x": "e"})
	if _, err := Materialize(t.TempDir(), e, files, nil); err != nil {
		t.Errorf("portable names refused: %v", err)
	}
}

func TestCheckNameSuperscriptDevices(t *testing.T) {
	// Windows also reserves COM and LPT with superscript digits; such names
	// are refused for that rule before any other.
	for _, n := range []string{"COM\u00b9.md", "lpt\u00b2", "Com\u00b3"} {
		if err := checkName(n); !errors.Is(err, ErrUnsafeName) || !strings.Contains(err.Error(), "Windows device name") {
			t.Errorf("checkName(%q) = %v", n, err)
		}
	}
}
