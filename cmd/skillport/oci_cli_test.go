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

	"github.com/skillport/skillport/internal/ocitest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

// listServed opens args as serve does and returns skills/list's entries
// as JSON lines, and every file's bytes by URI.
func listServed(t testing.TB, args ...string) ([]string, map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := openSources(ctx, args, sourceOptions{log: quiet})
	if err != nil {
		t.Fatalf("serve %v: %v", args, err)
	}
	s, _, err := skillserver.New(nil, set.source, &skillserver.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Run(ctx, st)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	if err := skillclient.Register(c); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out []string
	files := map[string][]byte{}
	for e, err := range skillclient.New(sess, nil).List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	for _, p := range set.parts {
		cat := p.src.Catalog()
		for _, sk := range cat.Skills() {
			for _, f := range sk.Files {
				b, err := cat.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				files[f.URI] = b
			}
		}
	}
	return out, files
}

// TestPushThenServeOCI pushes the example tree with the push command and
// serves it from the registry: skills/list answers the same entries (same
// digests) as serving the folder, and every file is the same bytes.
func TestPushThenServeOCI(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	dest := "oci://" + reg.Host + "/acme/skills:v1"
	var out bytes.Buffer
	if err := runPush(context.Background(), &out, examplesDir, dest, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "pushed 5 skills to "+dest+" (sha256:") || !strings.Contains(out.String(), ", 0 already in the registry") {
		t.Errorf("push printed %q", out.String())
	}
	digest := strings.SplitN(out.String(), "(", 2)[1][:len("sha256:")+12]
	set, err := openSources(context.Background(), []string{dest}, sourceOptions{log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil || set.describe() != dest+" ("+digest+")" {
		t.Errorf("serve describes the source as %q, want %q (%v)", set.describe(), dest+" ("+digest+")", err)
	}
	// serve keeps what it fetched, by digest, in the user cache.
	if ents, err := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "skillport", "oci", "blobs", "sha256")); err != nil || len(ents) == 0 {
		t.Errorf("serve cached no blob: %v", err)
	}
	want, wantFiles := listServed(t, examplesDir)
	got, gotFiles := listServed(t, dest)
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skills/list from oci:\n%s\nfrom the folder:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(gotFiles) != len(wantFiles) {
		t.Errorf("%d files from oci, %d from the folder", len(gotFiles), len(wantFiles))
	}
	for uri, b := range wantFiles {
		if !bytes.Equal(gotFiles[uri], b) {
			t.Errorf("%s differs", uri)
		}
	}
	out.Reset()
	if err := runPush(context.Background(), &out, examplesDir, dest, nil); err != nil || !strings.Contains(out.String(), ": 0 blobs uploaded,") {
		t.Errorf("second push: %v %q", err, out.String())
	}
	for _, c := range []struct{ src, dest, want string }{
		{examplesDir, "oci://" + reg.Host + "/acme/skills@sha256:" + strings.Repeat("a", 64), "push to a tag"},
		{examplesDir, "ghcr.io/acme/skills", "starts with oci://"},
		{"/nonexistent", dest, "/nonexistent"},
	} {
		err := runPush(context.Background(), io.Discard, c.src, c.dest, nil)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("push %s %s: exit %d %v, want %q", c.src, c.dest, exitCode(err), err, c.want)
		}
	}
}

const examplesDir = "../../examples/skills"

// TestServeOCIFollowsTag: serve re-resolves an oci:// tag every --poll and
// swaps the moved tag's catalog in through the reload path.
func TestServeOCIFollowsTag(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(examplesDir)); err != nil {
		t.Fatal(err)
	}
	dest := "oci://" + reg.Host + "/acme/skills:main"
	if err := runPush(context.Background(), io.Discard, tree, dest, nil); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set, err := openSources(ctx, []string{dest}, sourceOptions{log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	set.parts[0].src.OnChange(func(_, _ published.Snapshot) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	set.follow(ctx, false, 20*time.Millisecond, quiet)
	md := filepath.Join(tree, "code-review", "SKILL.md")
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "\nA line pushed later.\n"...)
	if err := os.WriteFile(md, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPush(context.Background(), io.Discard, tree, dest, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not pick up the moved tag within 30s")
	}
	cat := set.parts[0].src.Catalog()
	f := cat.File("skill://code-review/SKILL.md")
	got, err := cat.ReadFile(f)
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("served SKILL.md after the tag moved: %q %v", got, err)
	}
}

// TestPushCommandLine runs push as a user types it.
func TestPushCommandLine(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	out, errOut, code := runCLI(t, "push", examplesDir, "oci://"+reg.Host+"/cli/skills:v1", "--plain-http")
	if code != 0 || !strings.HasPrefix(out, "pushed 5 skills to oci://"+reg.Host+"/cli/skills:v1 (sha256:") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "push", examplesDir)
	if code != 2 || !strings.Contains(errOut, "push: give a skill folder and a destination") {
		t.Errorf("push with one argument: exit %d, %s", code, errOut)
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "broken", "SKILL.md"), []byte("---\nname: other\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "push", bad, "oci://"+reg.Host+"/cli/bad:v1")
	if code != 1 || !strings.Contains(errOut, "1 skill is invalid; run skillport validate") {
		t.Errorf("push of an invalid skill: exit %d, %s", code, errOut)
	}
}

// TestPushToolHiveFormat: push --format toolhive writes a skill that serve
// reads back with the folder's digests; a tree of skills and an unknown
// format are refused.
func TestPushToolHiveFormat(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	one := filepath.Join(examplesDir, "code-review")
	dest := "oci://" + reg.Host + "/code-review:1.0.0"
	out, errOut, code := runCLI(t, "push", "--format", "toolhive", one, dest)
	if code != 0 || !strings.HasPrefix(out, "pushed 1 skill to "+dest) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want, _ := listServed(t, one)
	got, _ := listServed(t, dest)
	if len(want) != 1 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("served from ToolHive's layout:\n%s\nfrom the folder:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"push", "--format", "toolhive", examplesDir, dest}, 1, "one skill per reference"},
		{[]string{"push", "--format", "zip", one, dest}, 2, "--format zip"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
		}
	}
}
