package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"debug/buildinfo"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cloneHead clones the committed state of this repository, the tree a
// release is made from.
func cloneHead(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("make dist builds from git, which this test needs (Debian: apt-get install git): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	return dir
}

// TestDistArchives builds one target of each archive format. Its compiles
// are the ones make cross has just done with the same flags (-trimpath keeps
// the clone's directory out of the build cache's keys), so under make test
// it costs two links, not two cross-compilations of the tree.
func TestDistArchives(t *testing.T) {
	src := cloneHead(t)
	out := t.TempDir()
	if err := run(src, out, []string{"linux/arm64", "windows/amd64"}); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("SHA256SUMS has %d lines, want 2:\n%s", len(lines), sums)
	}
	// sha256sum -c (coreutils) is the check users run.
	cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = out
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, o)
	}
	for _, l := range lines {
		name := l[66:]
		switch {
		case strings.HasSuffix(name, "_linux_arm64.tar.gz"):
			bin := extractTarGz(t, filepath.Join(out, name), "skillport")
			checkStamp(t, name, bin)
		case strings.HasSuffix(name, "_windows_amd64.zip"):
			bin := extractZip(t, filepath.Join(out, name), "skillport.exe")
			checkStamp(t, name, bin)
		default:
			t.Errorf("unexpected archive %s", name)
		}
	}
}

// checkStamp makes sure the archive is named after the version the binary
// itself reports from its build info.
func checkStamp(t *testing.T, archive, bin string) {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" || !strings.HasPrefix(archive, "skillport_"+v+"_") {
		t.Errorf("%s holds a binary stamped %q", archive, v)
	}
}

func extractTarGz(t *testing.T, archive, exe string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	bin := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if filepath.Base(h.Name) == exe {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (mode %o)", archive, h.Name, h.Mode)
			}
			bin = writeTemp(t, tr)
		}
	}
	checkMembers(t, archive, names, exe)
	return bin
}

func extractZip(t *testing.T, archive, exe string) string {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	bin := ""
	for _, f := range zr.File {
		names = append(names, f.Name)
		if filepath.Base(f.Name) == exe {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			bin = writeTemp(t, r)
			r.Close()
		}
	}
	checkMembers(t, archive, names, exe)
	return bin
}

// checkMembers: one top directory named like the archive, holding the
// binary and the README.
func checkMembers(t *testing.T, archive string, names []string, exe string) {
	t.Helper()
	base := filepath.Base(archive)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".tar.gz"), ".zip")
	want := []string{base + "/" + exe, base + "/README.md"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v", archive, names, want)
	}
}

func writeTemp(t *testing.T, r io.Reader) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A release of a tree with uncommitted changes would carry a version that
// names a revision it does not hold.
func TestDistRefusesDirtyTree(t *testing.T) {
	src := cloneHead(t)
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(src, t.TempDir(), []string{"linux/amd64"})
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("run on a dirty tree: %v; want a refusal naming uncommitted changes", err)
	}
}

func TestDistRejectsUnknownTarget(t *testing.T) {
	err := run(".", t.TempDir(), []string{"plan9/386"})
	if err == nil || !strings.Contains(err.Error(), "plan9/386") {
		t.Fatalf("run: %v; want an error naming the target", err)
	}
}
