package jsonc

import (
	"strings"
	"testing"
)

type cfg struct {
	Servers map[string]struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	} `json:"mcpServers"`
}

func TestUnmarshalJSONC(t *testing.T) {
	src := "// a comment\n{\n  /* block */ \"mcpServers\": {\n    \"docs\": {\"command\": \"skillport\", \"args\": [\"serve\", \"./skills\",],}, // trailing\n  },\n}\n"
	var c cfg
	if err := Unmarshal("mcp.json", []byte(src), &c, true); err != nil {
		t.Fatal(err)
	}
	if c.Servers["docs"].Command != "skillport" || len(c.Servers["docs"].Args) != 2 {
		t.Errorf("%+v", c)
	}
}

func TestUnmarshalErrorsArePositioned(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		strict    bool
		want      string
	}{
		{"syntax", "{\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"x\" \"args\": []}\n  }\n}", false, "f.json:3:"},
		{"type", "{\n  \"mcpServers\": {\n    \"docs\": {\"command\": 7}\n  }\n}", false, `f.json:3:25: mcpServers.command: expected a string, found a JSON number`},
		{"unknown", "{\n  // typo\n  \"mcpServer\": {}\n}", true, `f.json:3:3: unknown field "mcpServer"`},
		{"trailing", "{} {}", false, "f.json:1:4: invalid character '{' after top-level value"},
		{"empty", "  ", false, "f.json:1:3: parsing value: unexpected EOF"},
		{"unclosed comment", "{ /* x", false, "f.json:1:"},
	} {
		var c cfg
		err := Unmarshal("f.json", []byte(tc.src), &c, tc.strict)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.name, err, tc.want)
		}
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\n")
	for _, tc := range []struct{ off, line, col int }{{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {4, 2, 2}, {100, 3, 1}, {-5, 1, 1}} {
		if l, c := Position(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte("// c\n{\"mcpServers\": {\"a\": {\"command\": \"x\",},},}"))
	f.Add([]byte("{\"mcpServers\": 3}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c cfg
		if err := Unmarshal("f", data, &c, true); err != nil {
			e, ok := err.(*Error)
			if !ok || e.Line < 0 || e.Column < 0 {
				t.Fatalf("%T %v", err, err)
			}
		}
	})
}
