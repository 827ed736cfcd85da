package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// examplesOrigin serves examples/skills in-process under the label "docs".
func examplesOrigin(t *testing.T) host.Origin {
	return dirOrigin(t, "../../examples/skills", "docs")
}

// dirOrigin serves the skills under dir in-process under label.
func dirOrigin(t *testing.T, dir, label string) host.Origin {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, st)
	return host.Origin{Label: label, Transport: ct}
}

func flags() *hostFlags { return &hostFlags{timeout: 10 * time.Second} }

// onTerminal makes output formatting act as on a terminal width columns wide.
func onTerminal(t *testing.T, width int) {
	old := terminalWidth
	terminalWidth = func(io.Writer) int { return width }
	t.Cleanup(func() { terminalWidth = old })
}

func TestLsTableAndJSON(t *testing.T) {
	onTerminal(t, 80)
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, false); err != nil {
		t.Fatalf("ls: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "ORIGIN") || !strings.Contains(lines[0], "DESCRIPTION") || !strings.HasSuffix(lines[0], "STATUS") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.Contains(out.String(), "pdf-processing") || !strings.Contains(out.String(), "verified-on-load") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := runLs(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, true); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Skills  []lsSkill  `json:"skills"`
		Origins []lsOrigin `json:"origins"`
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil || len(js.Skills) == 0 || !js.Origins[0].Declared {
		t.Errorf("--json: %v\n%s", err, out.String())
	}
}

func TestLsFailingServerExitsOne(t *testing.T) {
	silent, _ := mcp.NewInMemoryTransports()
	var out, errOut bytes.Buffer
	f := flags()
	f.timeout = 200 * time.Millisecond
	err := runLs(context.Background(), &out, &errOut, f, []host.Origin{examplesOrigin(t), {Label: "dead", Transport: silent}}, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), "dead") || !strings.Contains(out.String(), "pdf-processing") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", exitCode(err), out.String(), errOut.String())
	}
}

func TestVerifyAndPull(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, false); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), " 0 failed") {
		t.Errorf("verify:\n%s", out.String())
	}
	dir := t.TempDir()
	out.Reset()
	if err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, dir, false, false); err != nil {
		t.Fatalf("pull: %v\n%s%s", err, out.String(), errOut.String())
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			// Regular files only; executable exactly when they start with
			// "#!" (the examples' scripts/*.sh and *.py do).
			data, _ := os.ReadFile(p)
			if st, _ := os.Lstat(p); !st.Mode().IsRegular() || (st.Mode().Perm()&0o100 != 0) != strings.HasPrefix(string(data), "#!") {
				t.Errorf("%s written as %v", p, st.Mode())
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "pdf-processing", "SKILL.md")); err != nil {
		t.Error(err)
	}
}

// A skill whose supporting files have non-ASCII names goes through the
// real server and is pulled byte for byte (materialization refuses only names whose
// normalisation it cannot decide).
func TestPullNonASCIIFileNames(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"intl/SKILL.md":               "---\nname: intl\ndescription: Files named in several scripts.\n---\n\nSee references/café.md.\n",
		"intl/references/café.md":     "# Café\n\nUn café, s'il vous plaît.\n",
		"intl/references/日本語.md":      "日本語のテキスト\n",
		"intl/references/Привет.md":   "Привет, мир\r\n",
		"intl/assets/straße-plan.txt": "Straße",
	}
	for p, c := range files {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{dirOrigin(t, src, "docs")}, dir, false, false); err != nil {
		t.Fatalf("pull: %v\n%s%s", err, out.String(), errOut.String())
	}
	for p, c := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil || string(got) != c {
			t.Errorf("%s = %q, %v; want %q", p, got, err, c)
		}
	}
}

// Two servers with a skill of the same name: the second is not pulled over
// the first, and the user is told where the first went.
func TestPullSameNameTwice(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	origins := []host.Origin{examplesOrigin(t), dirOrigin(t, "../../examples/skills", "mirror")}
	err := runPull(context.Background(), &out, &errOut, flags(), origins, dir, false, false)
	want := "not pulled: docs:pdf-processing already goes to " + filepath.Join(dir, "pdf-processing")
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), want) {
		t.Errorf("exit %d; stderr lacks %q:\n%s", exitCode(err), want, errOut.String())
	}
}

func TestLoadPrintsWhatTheModelReceives(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	var out, errOut bytes.Buffer
	err := runLoad(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, "docs:pdf-processing", "", true)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{`<skill_content name="pdf-processing" source="mcp:docs"`, `trust="untrusted"`, "<skill_resources>"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("load output lacks %q:\n%s", want, out.String())
		}
	}
	// The body is the skill's, byte for byte: quotes and markup included.
	md, _ := os.ReadFile("../../examples/skills/pdf-processing/SKILL.md")
	_, body, _ := strings.Cut(strings.TrimPrefix(string(md), "---\n"), "\n---\n")
	if got, ok := host.UntrustedContent(out.String()); !ok || got != body || !strings.ContainsAny(body, `"'<>&`) {
		t.Errorf("load output does not carry SKILL.md's body byte for byte:\ngot  %q\nwant %q", got, body)
	}
	// Without a terminal, policy or --yes, loading is refused.
	out.Reset()
	err = runLoad(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, "docs:pdf-processing", "", false)
	if exitCode(err) != 1 || out.Len() != 0 || !strings.Contains(err.Error(), "not approved") {
		t.Errorf("unapproved load: exit %d, %v, output %q", exitCode(err), err, out.String())
	}
}

func TestServerArguments(t *testing.T) {
	mk := func(args ...string) ([]host.Origin, error) {
		cmd := &cobra.Command{Use: "ls"}
		var f hostFlags
		f.register(cmd, true)
		cmd.Flags().Parse(args)
		f.label = "server"
		return f.origins(cmd, cmd.Flags().Args(), io.Discard)
	}
	o, err := mk("http://127.0.0.1:8080/mcp")
	if err != nil || len(o) != 1 || o[0].URL != "http://127.0.0.1:8080/mcp" {
		t.Errorf("URL: %+v, %v", o, err)
	}
	o, err = mk("--", "node", "server.mjs", "./skills")
	if err != nil || len(o) != 1 || o[0].Command != "node" || strings.Join(o[0].Args, " ") != "server.mjs ./skills" {
		t.Errorf("command: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{}, {"not-a-url"}, {"ftp://x/y"}, {"extra", "http://x/mcp"}} {
		if _, err := mk(bad...); exitCode(err) != 2 {
			t.Errorf("%q: %v; want a usage error", bad, err)
		}
	}
}
