package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/ocitest"
)

// sameTree fails the test unless every file under want is in got with the
// same bytes, and got holds no other file.
func sameTree(t *testing.T, got, want string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		w, _ := os.ReadFile(p)
		g, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil || !bytes.Equal(g, w) {
			t.Errorf("%s: pulled %d bytes (%v), the source has %d", rel, len(g), err, len(w))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := 0
	filepath.WalkDir(got, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			m++
		}
		return nil
	})
	if m != n {
		t.Errorf("pulled %d files, the source has %d", m, n)
	}
}

// TestHostCommandsOCISource: what push wrote is a source of verify, pull
// (byte-identical to the folder pushed), ls (from --skills-dir and from a
// configuration file's skillDirs, as the gateway reads it) and install, as
// a git source is.
func TestHostCommandsOCISource(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	src := "oci://" + reg.Host + "/acme/skills:v1"
	if err := runPush(context.Background(), io.Discard, examplesDir, src, nil); err != nil {
		t.Fatal(err)
	}
	origins := []host.Origin{{Label: "team", OCI: src}}
	var out, errOut bytes.Buffer
	if err := runVerify(context.Background(), &out, &errOut, flags(), origins, false); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "5 skills verified, 0 failed") {
		t.Errorf("verify:\n%s", out.String())
	}
	to := t.TempDir()
	if err := runPull(context.Background(), io.Discard, &errOut, flags(), origins, to, false, false); err != nil {
		t.Fatalf("pull: %v\n%s", err, errOut.String())
	}
	// pull writes each skill to DIR/NAME, a nested skill inside its parent.
	for name, dir := range map[string]string{"refunds": "acme/billing/refunds", "code-review": "code-review", "git-workflow": "git-workflow", "pdf-processing": "pdf-processing"} {
		sameTree(t, filepath.Join(to, name), filepath.Join(examplesDir, dir))
	}
	if ents, _ := os.ReadDir(to); len(ents) != 4 {
		t.Errorf("pull wrote %d folders, want 4", len(ents))
	}

	cfg := filepath.Join(t.TempDir(), "skillport.json")
	if err := os.WriteFile(cfg, []byte(`{"skillDirs": [{"label": "team", "path": "`+src+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgOrigins, _, err := host.LoadConfig(cfg)
	if err != nil || len(cfgOrigins) != 1 || cfgOrigins[0].OCI != src {
		t.Fatalf("config origins %+v, %v", cfgOrigins, err)
	}
	stdout, stderr, code := runCLI(t, "ls", "--config", cfg, "--no-local")
	if code != 0 || !strings.Contains(stdout, "team") || !strings.Contains(stdout, "pdf-processing") {
		t.Errorf("ls --config: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "ls", "--skills-dir", "team="+src)
	if code != 0 || !strings.Contains(stdout, "pdf-processing") {
		t.Errorf("ls --skills-dir: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "verify", src)
	if code != 0 || !strings.Contains(stdout, "5 skills verified") {
		t.Errorf("verify %s: exit %d\n%s%s", src, code, stdout, stderr)
	}

	home := fakeHome(t)
	stdout, stderr, code = runCLI(t, "install", src, "--agent", "claude-code", "--skill", "pdf-processing")
	if code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
	}
	sameTree(t, filepath.Join(home, ".claude", "skills", "pdf-processing"), filepath.Join(examplesDir, "pdf-processing"))
	lock := readLock(t, filepath.Join(home, ".config", "skillport", "skills.lock"))
	if len(lock.Skills) != 1 || lock.Skills[0].Resolved.Kind != "oci" || !strings.HasPrefix(lock.Skills[0].Resolved.ServerVersion, "sha256:") {
		t.Errorf("lock records %+v", lock.Skills)
	}

	// A reference that does not parse is a usage error naming the problem.
	for _, args := range [][]string{
		{"verify", "oci://" + reg.Host + "/Acme/skills"},
		{"ls", "--skills-dir", "team=oci://" + reg.Host},
		{"install", "oci://" + reg.Host + "/acme/skills:-x", "--agent", "claude-code"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "bad OCI reference") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	// A reference the registry lacks: verify fails naming it.
	_, stderr, code = runCLI(t, "verify", "oci://"+reg.Host+"/acme/none:v1")
	if code == 0 || !strings.Contains(stderr, "acme/none") {
		t.Errorf("verify of a missing reference: exit %d\n%s", code, stderr)
	}
}
