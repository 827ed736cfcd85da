package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// TestSiteURL: `skillport ls|verify|pull https://site` starts from the
// site's discovery document and goes on over the MCP endpoint it names,
// here our own serve --http composition; a site without one is an error
// naming the document.
func TestSiteURL(t *testing.T) {
	ep, src, quiet := examplesEndpoint(t)
	if err := mountWeb(ep, src, quiet); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ep)
	defer ts.Close()

	mk := func(args ...string) (*cobra.Command, *hostFlags) {
		cmd := &cobra.Command{Use: "ls"}
		f := flags()
		f.register(cmd, false)
		cmd.Flags().Parse(args)
		f.label = "site"
		return cmd, f
	}
	cmd, f := mk(ts.URL)
	var note bytes.Buffer
	origins, err := f.origins(cmd, cmd.Flags().Args(), &note)
	if err != nil || len(origins) != 1 || origins[0].URL != ts.URL+"/mcp" {
		t.Fatalf("origins %+v, %v", origins, err)
	}
	if !strings.Contains(note.String(), "/.well-known/agent-skills/index.json") {
		t.Errorf("no note of the discovery: %q", note.String())
	}
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, f, origins, false); err != nil || !strings.Contains(out.String(), "pdf-processing") {
		t.Errorf("ls %s: %v\n%s%s", ts.URL, err, out.String(), errOut.String())
	}
	out.Reset()
	if err := runVerify(context.Background(), &out, &errOut, f, origins, false); err != nil || !strings.Contains(out.String(), " 0 failed") {
		t.Errorf("verify %s: %v\n%s%s", ts.URL, err, out.String(), errOut.String())
	}

	// pull --skill, as the skill page's snippet says: that skill only.
	dir := t.TempDir()
	out.Reset()
	f.only = []string{"pdf-processing"}
	if err := runPull(context.Background(), &out, &errOut, f, origins, dir, false, false); err != nil {
		t.Fatalf("pull --skill: %v\n%s%s", err, out.String(), errOut.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "pdf-processing" {
		t.Errorf("pull --skill pdf-processing wrote %v", ents)
	}
	errOut.Reset()
	f.only = []string{"no/such-skill"}
	if err := runPull(context.Background(), &out, &errOut, f, origins, t.TempDir(), false, false); exitCode(err) != 1 || !strings.Contains(errOut.String(), "--skill no/such-skill: no such skill") {
		t.Errorf("pull --skill of a missing skill: %v\n%s", err, errOut.String())
	}

	// A site without a discovery document nor an MCP endpoint at its
	// root: both are said.
	bare := httptest.NewServer(http.NotFoundHandler())
	defer bare.Close()
	cmd, f = mk(bare.URL + "/")
	origins, err = f.origins(cmd, cmd.Flags().Args(), io.Discard)
	if err != nil {
		t.Fatalf("bare site: %v", err)
	}
	errOut.Reset()
	err = runLs(context.Background(), io.Discard, &errOut, f, origins, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), "no MCP endpoint at / (404 Not Found)") ||
		!strings.Contains(errOut.String(), bare.URL+"/.well-known/agent-skills/index.json: 404") {
		t.Errorf("bare site: %v\n%s", err, errOut.String())
	}
	// An MCP endpoint URL is used as given.
	cmd, f = mk(ts.URL + "/mcp")
	if o, err := f.origins(cmd, cmd.Flags().Args(), io.Discard); err != nil || o[0].URL != ts.URL+"/mcp" {
		t.Errorf("MCP URL: %+v, %v", o, err)
	}
}

// TestMCPAtTheRoot: a URL without a path whose server has no discovery
// document (a GET answers 405) but serves MCP at the root, as the
// TypeScript SDK's reference server does, is listed.
func TestMCPAtTheRoot(t *testing.T) {
	ep, _, _ := examplesEndpoint(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		r.URL.Path = "/mcp"
		ep.ServeHTTP(w, r)
	}))
	defer ts.Close()
	cmd := &cobra.Command{Use: "ls"}
	f := flags()
	f.register(cmd, false)
	cmd.Flags().Parse([]string{ts.URL})
	origins, err := f.origins(cmd, cmd.Flags().Args(), io.Discard)
	if err != nil {
		t.Fatalf("origins: %v", err)
	}
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, f, origins, false); err != nil || !strings.Contains(out.String(), "pdf-processing") {
		t.Errorf("ls %s: %v\n%s%s", ts.URL, err, out.String(), errOut.String())
	}
}

// TestSiteURLOverHTTP: a site whose discovery document names no MCP
// endpoint (our serve --http with web.Options.NoMCP) is read over plain
// HTTP: ls, verify and pull work from the SKILL.md downloads, and an entry
// whose digest does not match what its url serves is refused, saying so.
func TestSiteURLOverHTTP(t *testing.T) {
	ep, src, quiet := examplesEndpoint(t)
	wh, err := web.New(src, &web.Options{NoMCP: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range wh.Routes() {
		ep.Handle(p, wh)
	}
	// tamper, when set, replaces the digest of code-review in the document.
	var tamper bool
	var mcpCalls int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			mcpCalls++
		}
		if r.URL.Path != wire.WellKnownPath || !tamper {
			ep.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		ep.ServeHTTP(rec, r)
		var d wire.Discovery
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
			t.Error(err)
		}
		for i := range d.Skills {
			if d.Skills[i].Name == "code-review" {
				d.Skills[i].Digest = "sha256:" + strings.Repeat("0", 64)
			}
		}
		json.NewEncoder(w).Encode(d)
	}))
	defer ts.Close()
	if _, body := httpGet(t, ts.URL+wire.WellKnownPath); strings.Contains(body, `"mcp"`) {
		t.Fatalf("NoMCP document names an endpoint: %s", body)
	}

	run := func() (*hostFlags, []host.Origin, string) {
		cmd := &cobra.Command{Use: "ls"}
		f := flags()
		f.register(cmd, false)
		cmd.Flags().Parse([]string{ts.URL})
		f.label = "site"
		var note bytes.Buffer
		origins, err := f.origins(cmd, cmd.Flags().Args(), &note)
		if err != nil || len(origins) != 1 || origins[0].Transport == nil {
			t.Fatalf("origins %+v, %v\n%s", origins, err, note.String())
		}
		return f, origins, note.String()
	}
	f, origins, note := run()
	if !strings.Contains(note, "names no MCP endpoint") || strings.Contains(note, "refused") {
		t.Errorf("note: %q", note)
	}
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, f, origins, false); err != nil {
		t.Fatalf("ls: %v\n%s", err, errOut.String())
	}
	for _, name := range []string{"pdf-processing", "code-review", "git-workflow", "refunds", "form-filling"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("ls lacks %s:\n%s", name, out.String())
		}
	}
	out.Reset()
	if err := runVerify(context.Background(), &out, &errOut, f, origins, false); err != nil || !strings.Contains(out.String(), " 0 failed") {
		t.Errorf("verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	dir := t.TempDir()
	if err := runPull(context.Background(), &out, &errOut, f, origins, dir, false, false); err != nil {
		t.Fatalf("pull: %v\n%s", err, errOut.String())
	}
	// Skills with more files come as archive entries: all of them arrive.
	for _, p := range []string{"code-review/SKILL.md", "code-review/references/CHECKLIST.md", "pdf-processing/scripts/extract_text.py", "pdf-processing/assets/logo.png", "git-workflow/scripts/check-branch.sh"} {
		want, _ := os.ReadFile("../../examples/skills/" + p)
		if got, err := os.ReadFile(dir + "/" + p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("pulled %s differs from the served one (%v)", p, err)
		}
	}
	if mcpCalls != 0 {
		t.Errorf("%d requests to /mcp; the document names no endpoint", mcpCalls)
	}

	tamper = true
	f, origins, note = run()
	if !strings.Contains(note, `"code-review"`) || !strings.Contains(note, "digest mismatch") {
		t.Errorf("tampered digest: note %q", note)
	}
	out.Reset()
	if err := runLs(context.Background(), &out, &errOut, f, origins, false); err != nil || strings.Contains(out.String(), "code-review") || !strings.Contains(out.String(), "git-workflow") {
		t.Errorf("ls with a tampered digest: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runVerify(context.Background(), &out, &errOut, f, origins, false); exitCode(err) != 1 || !strings.Contains(out.String(), " 1 failed") || !strings.Contains(out.String(), "FAIL site:") {
		t.Errorf("verify with a tampered digest: %v\n%s", err, out.String())
	}
}

func httpGet(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// examplesEndpoint is serve --http's endpoint over examples/skills, without
// the web catalog.
func examplesEndpoint(t *testing.T) (*endpoint.Endpoint, published.Source, *slog.Logger) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir("../../examples/skills", &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	s, _, err := skillserver.New(&mcp.Implementation{Name: "t", Version: "0"}, src, &skillserver.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), &endpoint.Options{Source: src, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return ep, src, quiet
}
