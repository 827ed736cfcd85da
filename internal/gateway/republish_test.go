package gateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
)

// gatewayOrigin connects a fresh host to g, in process, as a client that
// speaks the Skills Extension.
func gatewayOrigin(t *testing.T, g interface{ Server() *mcp.Server }) *host.Host {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	h, err := host.New([]host.Origin{{Label: "gw", Transport: ct}}, &host.Options{Logger: discard, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRepublishedExtension: a host that speaks the Skills Extension sees
// every upstream skill under skill://<origin>/..., with the upstream
// digests, and every file it reads verifies. Listing fetched nothing.
func TestRepublishedExtension(t *testing.T) {
	f := newFake()
	f.add("pdf-processing", "A fake's PDF skill, same name as ours.", "Fake body.", map[string]string{"notes/a.md": "note"})
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs, f.origin(t, "other"), {Label: "local", Dir: examples}}, nil, nil)
	<-g.Ready()

	h := gatewayOrigin(t, g)
	if f.readCount() != 0 {
		t.Errorf("listing through the gateway read %d upstream files", f.readCount())
	}
	var uris []string
	for _, e := range h.Skills() {
		uris = append(uris, e.URI)
	}
	for _, want := range []string{
		"skill://docs/pdf-processing/SKILL.md",
		"skill://other/pdf-processing/SKILL.md",
		"skill://local/pdf-processing/SKILL.md",
		"skill://docs/acme/billing/refunds/SKILL.md",
		"skill://docs/pdf-processing/form-filling/SKILL.md",
	} {
		if !slices.Contains(uris, want) {
			t.Errorf("re-published skills lack %s: %v", want, uris)
		}
	}
	for _, d := range h.Diagnostics() {
		t.Errorf("diagnostic from the gateway's listing: %s", d)
	}
	ctx := context.Background()
	for _, e := range h.Skills() {
		files, err := h.FetchAll(ctx, e)
		if err != nil {
			t.Errorf("%s: %v", e.URI, err)
			continue
		}
		if len(files) != len(e.Files) {
			t.Errorf("%s: %d of %d files", e.URI, len(files), len(e.Files))
		}
	}
	// Nothing but what was read: the fake served exactly its two files.
	if n := f.readCount(); n != 2 {
		t.Errorf("the fake upstream served %d reads for 2 files", n)
	}

	// Directory reads of a re-published skill.
	cs := clientOf(t, g, nil)
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://docs/code-review/references/CHECKLIST.md"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "# Review checklist") {
		t.Errorf("resources/read through the gateway: %v %+v", err, res)
	}
}
