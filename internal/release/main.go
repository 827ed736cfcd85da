// Command release builds skillport for every supported OS and architecture
// and packs each binary into an archive people on that OS can open with what
// they already have: tar.gz for Linux and macOS, zip for Windows. A
// SHA256SUMS file, in the format sha256sum -c reads, lists every archive.
//
// The version is the one the go command stamps into the binary's build info
// from git (a tag such as v0.3.0, else a pseudo-version), which is what
// `skillport version` reports; no -ldflags variables are involved, so a
// binary built by `go install …@v0.3.0` reports the same thing. A build
// whose version cannot be read from git, or whose tree has uncommitted
// changes, is refused: an archive must say what it holds.
//
// Usage (see `make dist`):
//
//	go run ./internal/release [-out dist] [GOOS/GOARCH ...]
//
// With no targets it builds all of [Targets].
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Targets are the platforms every release carries.
var Targets = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

const pkg = "./cmd/skillport"

func main() {
	out := flag.String("out", "dist", "directory the archives and SHA256SUMS are written to (emptied first)")
	flag.Parse()
	targets := flag.Args()
	if len(targets) == 0 {
		targets = Targets
	}
	if err := run(".", *out, targets); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// run builds the module at dir (its root) for targets into out.
func run(dir, out string, targets []string) error {
	for _, t := range targets {
		if !slices.Contains(Targets, t) {
			return fmt.Errorf("target %q is not one of %s", t, strings.Join(Targets, ", "))
		}
	}
	// Refused before anything is built; the build info is checked again below.
	status := exec.Command("git", "status", "--porcelain", "--untracked-files=no")
	status.Dir = dir
	if changed, err := status.Output(); err != nil {
		return fmt.Errorf("git status in %s: %w; make dist needs a git clone and git on $PATH", dir, err)
	} else if len(changed) > 0 {
		return fmt.Errorf("the tree has uncommitted changes:\n%scommit or stash them first, so the archives hold a revision others can rebuild", changed)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build, err := os.MkdirTemp("", "skillport-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)

	var sums []string
	for _, t := range targets {
		goos, goarch, _ := strings.Cut(t, "/")
		exe := "skillport"
		if goos == "windows" {
			exe += ".exe"
		}
		bin := filepath.Join(build, goos+"_"+goarch, exe)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-o", bin, pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", t, err)
		}
		version, stamp, err := stampedVersion(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		base := "skillport_" + version + "_" + goos + "_" + goarch
		name := base + ".tar.gz"
		if goos == "windows" {
			name = base + ".zip"
		}
		files := []member{{path: base + "/" + exe, src: bin, mode: 0o755}, {path: base + "/README.md", src: filepath.Join(dir, "README.md"), mode: 0o644}}
		if goos == "windows" {
			err = writeZip(filepath.Join(out, name), files, stamp)
		} else {
			err = writeTarGz(filepath.Join(out, name), files, stamp)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sum, err := fileSHA256(filepath.Join(out, name))
		if err != nil {
			return err
		}
		sums = append(sums, sum+"  "+name+"\n")
		fmt.Println(filepath.Join(out, name))
	}
	slices.SortFunc(sums, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(strings.Join(sums, "")), 0o644)
}

// stampedVersion reads back what the go command recorded in the binary, so
// the archive is named after exactly what `skillport version` will print.
func stampedVersion(bin string) (version string, stamp time.Time, err error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", time.Time{}, err
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	switch {
	case info.Main.Version == "" || info.Main.Version == "(devel)" || settings["vcs.revision"] == "":
		return "", time.Time{}, errors.New("the go command stamped no version from git into the build info; run make dist from a git clone (git clone, not a git worktree), with git on $PATH")
	case settings["vcs.modified"] == "true" || strings.HasSuffix(info.Main.Version, "+dirty"):
		return "", time.Time{}, fmt.Errorf("the tree has uncommitted changes (version %s); commit or stash them first, so the archive holds a revision others can rebuild", info.Main.Version)
	}
	stamp, err = time.Parse(time.RFC3339, settings["vcs.time"])
	if err != nil {
		return "", time.Time{}, fmt.Errorf("vcs.time %q: %w", settings["vcs.time"], err)
	}
	return info.Main.Version, stamp, nil
}

// member is one file of an archive.
type member struct {
	path, src string
	mode      int64
}

// writeTarGz and writeZip date every member at the commit's time, so the
// same revision always yields the same archive bytes.
func writeTarGz(name string, files []member, stamp time.Time) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, m := range files {
		data, err := os.ReadFile(m.src)
		if err != nil {
			f.Close()
			return err
		}
		hdr := &tar.Header{Name: m.path, Mode: m.mode, Size: int64(len(data)), ModTime: stamp, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(tw.Close(), zw.Close(), f.Close())
}

func writeZip(name string, files []member, stamp time.Time) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, m := range files {
		hdr := &zip.FileHeader{Name: m.path, Method: zip.Deflate, Modified: stamp.UTC()}
		hdr.SetMode(os.FileMode(m.mode))
		w, err := zw.CreateHeader(hdr)
		if err == nil {
			err = copyFrom(w, m.src)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(zw.Close(), f.Close())
}

func copyFrom(w io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(w, in)
	return err
}

func fileSHA256(name string) (string, error) {
	h := sha256.New()
	if err := copyFrom(h, name); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
