package web_test

import (
	"flag"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/published"
)

var updateSnippets = flag.Bool("update-snippets", false, "rewrite testdata/snippets.golden from the current page")

var snippetRE = regexp.MustCompile(`(?s)<section class="snippet"><h3>(.*?)</h3><p class="muted">(.*?)</p><pre><code>(.*?)</code></pre>`)

// TestSnippetsGiveHostsTheGateway: the "Use it" snippets of a skill page
// give Claude Desktop, Cursor, VS Code and Codex the gateway (a skills
// server has no tools, so a direct connection gives them nothing), and the
// direct configuration only to hosts with the Skills Extension. The whole
// set is compared with testdata/snippets.golden.
func TestSnippetsGiveHostsTheGateway(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	_, body := get(t, ts.URL+"/s/pdf/")
	mcpURL := ts.URL + "/mcp"
	var golden strings.Builder
	seen := map[string]string{}
	for _, m := range snippetRE.FindAllStringSubmatch(body, -1) {
		title, where, text := html.UnescapeString(m[1]), html.UnescapeString(m[2]), html.UnescapeString(m[3])
		seen[title] = text
		golden.WriteString("## " + title + "\n# " + where + "\n" + strings.ReplaceAll(text, ts.URL, "http://HOST") + "\n\n")
	}
	for _, host := range []string{"Claude Desktop", "Cursor", "VS Code", "Codex"} {
		text, ok := seen[host]
		if !ok {
			t.Errorf("no snippet for %s", host)
			continue
		}
		if !strings.Contains(text, `"gateway"`) || !strings.Contains(text, `"--config"`) || strings.Contains(text, mcpURL) {
			t.Errorf("%s is not given the gateway:\n%s", host, text)
		}
	}
	if text := seen["skillport gateway"]; !strings.Contains(text, mcpURL) || !strings.Contains(text, `"include"`) {
		t.Errorf("the gateway.json snippet does not reach %s:\n%s", mcpURL, text)
	}
	if text := seen["Hosts with the Skills Extension"]; !strings.Contains(text, mcpURL) {
		t.Errorf("no direct snippet labelled for hosts with the extension: %q", text)
	}
	file := filepath.Join("testdata", "snippets.golden")
	if *updateSnippets {
		if err := os.WriteFile(file, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update-snippets to create it)", err)
	}
	if golden.String() != string(want) {
		t.Errorf("snippets differ from %s (run with -update-snippets after checking):\n%s", file, golden.String())
	}
}
