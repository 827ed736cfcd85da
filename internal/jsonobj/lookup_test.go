package jsonobj

import "testing"

func TestLookup(t *testing.T) {
	obj := []byte(` { "name" : "pdf", "a\"b": 1, "\u00e9t\u00e9": [1, {"x": "}"}], "meta": {"k": {"d": [1, 2]}}, "e": "" } `)
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"name", `"pdf"`, true},
		{`a"b`, `1`, true},
		{"été", `[1, {"x": "}"}]`, true},
		{"meta", `{"k": {"d": [1, 2]}}`, true},
		{"e", `""`, true},
		{"k", "", false}, // nested, not a member
		{"absent", "", false},
	} {
		got, ok := Lookup(obj, tc.key)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
		if ok && cap(got) != len(got) {
			t.Errorf("Lookup(%q): the value can be appended to over the rest of the object", tc.key)
		}
	}
	for _, raw := range []string{"", "{}", "[]", `"s"`, "{ }"} {
		if v, ok := Lookup([]byte(raw), "name"); ok {
			t.Errorf("Lookup in %q = %q, want nothing", raw, v)
		}
	}
}
