package skill

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	valid := []string{"a", "pdf", "pdf-processing", "a1-b2-c3", strings.Repeat("a", 64), "0"}
	invalid := []string{"", "PDF", "Pdf", "-pdf", "pdf-", "pdf--x", "pdf_x", "pdf x", "pdf.x", strings.Repeat("a", 65), "café", "技能", "мой-навык", "a/b"}
	for _, n := range valid {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range invalid {
		if err := ValidName(n); err == nil {
			t.Errorf("ValidName(%q) = nil, want an error", n)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", 1068)
	tests := []struct {
		name  string
		fm    string
		dir   string
		rules []string // expected rules, in order; "" for none
	}{
		{"valid", "name: pdf\ndescription: Does PDFs.\n", "pdf", nil},
		{"valid with all fields", "name: pdf\ndescription: d\nlicense: MIT\ncompatibility: Python 3\nmetadata:\n  a: b\nallowed-tools: Bash(git:*) Read\n", "pdf", nil},
		{"dir check skipped", "name: pdf\ndescription: d\n", "", nil},
		{"missing name", "description: d\n", "x", []string{RuleNameMissing}},
		{"name not a string", "name: 12\ndescription: d\n", "12", []string{RuleNameType}},
		{"uppercase", "name: PDF\ndescription: d\n", "PDF", []string{RuleNameFormat}},
		{"underscore", "name: pdf_x\ndescription: d\n", "pdf_x", []string{RuleNameFormat}},
		{"double hyphen", "name: pdf--x\ndescription: d\n", "pdf--x", []string{RuleNameFormat}},
		{"leading hyphen", "name: -pdf\ndescription: d\n", "-pdf", []string{RuleNameFormat}},
		{"unicode", "name: café\ndescription: d\n", "café", []string{RuleNameFormat}},
		{"too long", "name: " + strings.Repeat("a", 65) + "\ndescription: d\n", strings.Repeat("a", 65), []string{RuleNameLength}},
		{"empty name", "name: ''\ndescription: d\n", "", []string{RuleNameLength}},
		{"dir mismatch", "name: template-skill\ndescription: d\n", "template", []string{RuleNameDirectory}},
		{"missing description", "name: a\n", "a", []string{RuleDescriptionMissing}},
		{"blank description", "name: a\ndescription: '   '\n", "a", []string{RuleDescriptionLength}},
		{"long description", "name: a\ndescription: " + long + "\n", "a", []string{RuleDescriptionLength}},
		{"description 1024 runes ok", "name: a\ndescription: " + strings.Repeat("é", 1024) + "\n", "a", nil},
		{"description list", "name: a\ndescription: [x]\n", "a", []string{RuleDescriptionType}},
		{"license number", "name: a\ndescription: d\nlicense: 2\n", "a", []string{RuleLicenseType}},
		{"compatibility long", "name: a\ndescription: d\ncompatibility: " + strings.Repeat("c", 501) + "\n", "a", []string{RuleCompatibilityLength}},
		{"compatibility bool", "name: a\ndescription: d\ncompatibility: true\n", "a", []string{RuleCompatibilityType}},
		{"metadata list", "name: a\ndescription: d\nmetadata: [a]\n", "a", []string{RuleMetadataType}},
		{"metadata number value", "name: a\ndescription: d\nmetadata:\n  version: 1.0\n", "a", []string{RuleMetadataType}},
		{"metadata reserved", "name: a\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n", "a", []string{RuleMetadataReserved}},
		{"allowed-tools list", "name: a\ndescription: d\nallowed-tools: [Bash, Read]\n", "a", []string{RuleAllowedToolsType}},
		{"unknown field warns", "name: a\ndescription: d\nhooks: {}\n", "a", []string{RuleUnknownField}},
		{"several, in line order", "description: " + long + "\nname: Bad\n", "Bad", []string{RuleDescriptionLength, RuleNameFormat}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte("---\n" + tt.fm + "---\n"))
			if err != nil {
				t.Fatal(err)
			}
			fs := Validate(doc, tt.dir)
			var got []string
			for _, f := range fs {
				got = append(got, f.Rule)
				if f.Line < 1 || f.Column < 1 || f.Message == "" {
					t.Errorf("finding without position or message: %+v", f)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.rules) {
				t.Errorf("rules %v, want %v (findings %v)", got, tt.rules, fs)
			}
			wantErr := false
			for _, r := range tt.rules {
				if r != RuleUnknownField && r != RuleMetadataReserved {
					wantErr = true
				}
			}
			if HasErrors(fs) != wantErr {
				t.Errorf("HasErrors = %v, want %v", HasErrors(fs), wantErr)
			}
		})
	}
}

func TestValidateMessageAndPosition(t *testing.T) {
	// The example from the issue: the value's line and column, and the count.
	src := "---\nname: pdf\ndescription: " + strings.Repeat("d", 1068) + "\n---\n"
	doc, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fs := Validate(doc, "pdf")
	if len(fs) != 1 {
		t.Fatalf("findings %v", fs)
	}
	f := fs[0]
	if f.Line != 3 || f.Column != 14 || f.Message != "description: 1068 characters, the limit is 1024" {
		t.Errorf("got %d:%d %q", f.Line, f.Column, f.Message)
	}
	doc, _ = Parse([]byte("---\nname: template-skill\ndescription: d\n---\n"))
	fs = Validate(doc, "template")
	if len(fs) != 1 || fs[0].Line != 2 || fs[0].Column != 7 || fs[0].Message != `name "template-skill" must equal its directory name "template"; rename the folder or the name` {
		t.Errorf("got %+v", fs)
	}
}
