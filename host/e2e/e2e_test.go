// Package e2e_test runs the host against peers nobody in this package
// wrote: our own server package, the TypeScript reference skills server
// (over Streamable HTTP and stdio), and the official conformance suite's
// client scenarios driving the skillport CLI. It holds tests only, so the
// host package itself never depends on the server.
package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skillserver"
)

const examples = "../../examples/skills"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func allow() approval.Approver {
	return approval.Func(func(context.Context, *approval.Request) (approval.Decision, error) {
		return approval.Decision{Allow: true}, nil
	})
}

// checkAll lists, loads and verifies every skill of the only origin.
func checkAll(t *testing.T, origin host.Origin, want int) {
	t.Helper()
	h, err := host.New([]host.Origin{origin}, &host.Options{Approver: allow(), Logger: quiet, CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	if err := h.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if st := h.Origins()[0]; st.Err != nil || !st.Declared {
		t.Fatalf("origin: %+v", st)
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics: %v", d)
	}
	skills := h.Skills()
	if len(skills) != want {
		t.Fatalf("%d skills listed, want %d", len(skills), want)
	}
	tools := h.Tools()
	for _, e := range skills {
		files, err := h.FetchAll(ctx, e)
		if err != nil {
			t.Errorf("%s: %v", e.CLIName(), err)
			continue
		}
		if len(files) != len(e.Files) {
			t.Errorf("%s: %d of %d files", e.CLIName(), len(files), len(e.Files))
		}
		out, err := tools.ReadSkill(ctx, e.Qualified)
		if err != nil || !strings.Contains(out, `source="mcp:`+origin.Label+`"`) {
			t.Errorf("read_skill %s: %v", e.Qualified, err)
		}
		if _, err := tools.ListSkillDir(ctx, e.Qualified, ""); err != nil {
			t.Errorf("list_skill_dir %s: %v", e.Qualified, err)
		}
	}
}

func exampleCount(t *testing.T) int {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return len(cat.Skills())
}

func TestOwnServerInProcess(t *testing.T) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: quiet, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, st)
	checkAll(t, host.Origin{Label: "own", Transport: ct}, len(cat.Skills()))
}

func TestTSReferenceServerHTTP(t *testing.T) {
	url := peers.StartTSServer(t, absExamples(t))
	checkAll(t, host.Origin{Label: "ts", URL: url}, exampleCount(t))
}

func TestTSReferenceServerStdio(t *testing.T) {
	checkAll(t, host.Origin{Label: "ts", Command: peers.Node(t), Args: []string{peers.Script(t, "ts-skills-server.mjs"), absExamples(t)}}, exampleCount(t))
}

func absExamples(t *testing.T) string {
	p, err := filepath.Abs(examples)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildCLI returns the skillport command, built once for the whole run.
func buildCLI(t *testing.T) string {
	t.Helper()
	return skilltest.Binary(t)
}

func TestConformanceClientScenarios(t *testing.T) {
	bin := buildCLI(t)
	for scenario, command := range map[string]string{
		"sep-2640-client-no-prefetch":        peers.ShellJoin(bin, "ls"),
		"sep-2640-client-verify-digest":      peers.ShellJoin(bin, "pull", "--to", t.TempDir()),
		"sep-2640-client-verify-size":        peers.ShellJoin(bin, "pull", "--to", t.TempDir()),
		"sep-2640-client-verify-frontmatter": peers.ShellJoin(bin, "pull", "--to", t.TempDir()),
	} {
		t.Run(scenario, func(t *testing.T) {
			args := append(peers.Conformance(t), "client", "--scenario", scenario, "--command", command, "--timeout", "60000")
			if _, err := peers.Run(context.Background(), peers.Command{Args: args, Env: peers.Env(t), Timeout: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCLIAgainstTSServer(t *testing.T) {
	bin := buildCLI(t)
	url := peers.StartTSServer(t, absExamples(t))
	for _, args := range [][]string{{"ls", url}, {"verify", url}, {"pull", "--to", t.TempDir(), url}} {
		res, err := peers.Run(context.Background(), peers.Command{Args: append([]string{bin}, args...), Timeout: time.Minute})
		if err != nil {
			t.Fatalf("skillport %s: %v", args[0], err)
		}
		if args[0] == "verify" && !strings.Contains(string(res.Stdout), "0 failed") {
			t.Errorf("verify output:\n%s", res.Stdout)
		}
	}
}
