package gateway

import (
	"slices"
	"strings"
	"testing"
)

func tokens(s string, compounds bool) []string {
	var out []string
	tokenize(s, compounds, func(t string) { out = append(out, t) })
	return out
}

func TestTokenize(t *testing.T) {
	for _, c := range []struct {
		in        string
		compounds bool
		want      []string
	}{
		{"pdf-processing", true, []string{"pdf", "process", "pdf-processing"}},
		{"pdf-processing", false, []string{"pdf", "process"}},
		{"docs__billing/refunds", true, []string{"doc", "bill", "refund", "docs-billing-refunds"}},
		{"Fill PDF forms, merge files.", false, []string{"fill", "pdf", "form", "merge", "file"}},
		{"pdf_processing", true, []string{"pdf", "process", "pdf-processing"}},
		{"trailing- dash", true, []string{"trail", "dash"}},
		{"Übersetzung 日本語", false, []string{"übersetzung", "日本語"}},
		{"boxes classes status", false, []string{"box", "class", "status"}},
		{"", true, nil},
	} {
		if got := tokens(c.in, c.compounds); !slices.Equal(got, c.want) {
			t.Errorf("tokenize(%q, %v) = %q, want %q", c.in, c.compounds, got, c.want)
		}
	}
	if got := tokens(strings.Repeat("a", maxTokenLen+1)+" ok", false); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("an overlong token was indexed: %q", got)
	}
}

func TestSearchRanking(t *testing.T) {
	docs := []Doc{
		{Name: "pdf-processing", Description: "Extract text and tables from PDF files, fill PDF forms, and merge documents."},
		{Name: "code-review", Description: "Review a code change for correctness, security and readability."},
		{Name: "refunds acme/billing/refunds", Description: "Process customer refunds for the billing team."},
		{Name: "form-filling pdf-processing/form-filling", Description: "Fill in interactive forms."},
		{Name: "git-workflow", Description: "Branch, commit and open pull requests; review history.", Body: "Use rebase, never merge main into a feature branch."},
	}
	ix := BuildIndex(docs)
	for _, c := range []struct {
		query string
		first int
	}{
		{"pdf-processing", 0},
		{"pdf", 0},
		{"review my code", 1},
		{"open a pull request", 4},
		{"refund a customer", 2},
		{"billing", 2},
		{"fill forms", 3},
		{"rebase", 4}, // body match
	} {
		hits := ix.Search(c.query, 3)
		if len(hits) == 0 || hits[0].Doc != c.first {
			t.Errorf("Search(%q) = %v, want doc %d first", c.query, hits, c.first)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("Search(%q) not sorted: %v", c.query, hits)
			}
		}
	}
	if hits := ix.Search("zebra", 10); len(hits) != 0 {
		t.Errorf("a query matching nothing returned %v", hits)
	}
	if hits := ix.Search("pdf", 1); len(hits) != 1 {
		t.Errorf("limit 1 returned %d hits", len(hits))
	}
	if hits := BuildIndex(nil).Search("pdf", 5); hits != nil {
		t.Errorf("empty index returned %v", hits)
	}
}

// TestNameOutweighsDescription: a skill named for the query beats one that
// only mentions it, however often.
func TestNameOutweighsDescription(t *testing.T) {
	ix := BuildIndex([]Doc{
		{Name: "notes", Description: "Deploy notes: deploy, deploy, deploy and deploy again."},
		{Name: "deploy", Description: "Ship a release to production."},
	})
	if hits := ix.Search("deploy", 2); len(hits) != 2 || hits[0].Doc != 1 {
		t.Errorf("Search(deploy) = %v, want the skill named deploy first", hits)
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"pdf-processing", "a--b__c//d", "x-", "-x", "Ünïcödé-ñame", "\xff\xfe-a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tokenize(s, true, func(tok string) {
			if tok == "" || len(tok) > maxTokenLen || strings.HasPrefix(tok, "-") || strings.HasSuffix(tok, "-") {
				t.Fatalf("tokenize(%q) emitted %q", s, tok)
			}
		})
		BuildIndex([]Doc{{Name: s, Description: s, Body: s}}).Search(s, 5)
	})
}
