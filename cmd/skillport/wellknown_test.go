package main

import (
	"bytes"
	"context"
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
	"github.com/skillport/skillport/endpoint"
	"github.com/skillport/skillport/server"
)

// TestSiteURL: `skillport ls|verify|pull https://site` starts from the
// site's discovery document and goes on over the MCP endpoint it names,
// here our own serve --http composition; a site without one is an error
// naming the document.
func TestSiteURL(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir("../../examples/skills", &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	src := server.NewCatalogSource(cat)
	s, _, err := server.New(&mcp.Implementation{Name: "t", Version: "0"}, src, &server.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), &endpoint.Options{Source: src, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
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

	// A site without a discovery document.
	bare := httptest.NewServer(http.NotFoundHandler())
	defer bare.Close()
	cmd, f = mk(bare.URL + "/")
	_, err = f.origins(cmd, cmd.Flags().Args(), io.Discard)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), bare.URL+"/.well-known/agent-skills/index.json") || !strings.Contains(err.Error(), "404") {
		t.Errorf("bare site: %v", err)
	}
	// An MCP endpoint URL is used as given.
	cmd, f = mk(ts.URL + "/mcp")
	if o, err := f.origins(cmd, cmd.Flags().Args(), io.Discard); err != nil || o[0].URL != ts.URL+"/mcp" {
		t.Errorf("MCP URL: %+v, %v", o, err)
	}
}
