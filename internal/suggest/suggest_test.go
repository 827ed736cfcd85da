package suggest

import "testing"

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word string
		cand []string
		want string
	}{
		{"refund", []string{"acme/billing/refunds", "refunds", "pdf"}, "refunds"},
		{"/mpc", []string{"/mcp"}, "/mcp"},
		{"--skils-dir", []string{"--skills-dir", "--skill"}, "--skills-dir"},
		{"zzz", []string{"refunds"}, ""},
		{"Refunds", []string{"refunds"}, "refunds"},
		{"", []string{"a"}, "a"},
	} {
		if got := Closest(tc.word, tc.cand); got != tc.want {
			t.Errorf("Closest(%q, %v) = %q, want %q", tc.word, tc.cand, got, tc.want)
		}
	}
	if Distance("kitten", "sitting") != 3 {
		t.Error("Distance")
	}
}

func FuzzClosest(f *testing.F) {
	f.Add("refund", "refunds")
	f.Fuzz(func(t *testing.T, w, c string) {
		got := Closest(w, []string{c})
		if got != "" && got != c {
			t.Fatalf("Closest returned %q, not a candidate", got)
		}
		if Distance(w, c) != Distance(c, w) {
			t.Fatal("Distance is not symmetric")
		}
	})
}
