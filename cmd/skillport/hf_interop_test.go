package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/skill"
)

// hfDistribution copies the example skills into a directory laid out as
// Hugging Face's hf-mcp-server serves them (HF_SKILLS_DIR): the files, and
// skills.json listing each skill with its frontmatter and every file under
// its folder as {uri, digest}, without sizes, as that server publishes them.
// It returns the directory and each skill's folder by name.
func hfDistribution(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	src, _ := filepath.Abs("../../examples/skills")
	type resource struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
	}
	type entry struct {
		URI         string            `json:"uri"`
		Frontmatter skill.Frontmatter `json:"frontmatter"`
		Resources   []resource        `json:"resources"`
	}
	var entries []entry
	folders := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			return err
		}
		if d.Name() != "SKILL.md" {
			return nil
		}
		doc, err := skill.Parse(data)
		if err != nil {
			return err
		}
		root := filepath.Dir(p)
		e := entry{URI: "skill://" + filepath.ToSlash(filepath.Dir(rel)) + "/SKILL.md", Frontmatter: doc.Frontmatter}
		err = filepath.WalkDir(root, func(q string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(q)
			if err != nil {
				return err
			}
			r, _ := filepath.Rel(src, q)
			sum := sha256.Sum256(b)
			e.Resources = append(e.Resources, resource{URI: "skill://" + filepath.ToSlash(r), Digest: "sha256:" + hex.EncodeToString(sum[:])})
			return nil
		})
		entries = append(entries, e)
		folders[doc.Frontmatter.Name()] = filepath.Join(dir, filepath.Dir(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"skills": entries})
	if err := os.WriteFile(filepath.Join(dir, "skills.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, folders
}

// TestHuggingFaceServer: ls, verify and pull against Hugging Face's
// hf-mcp-server, a real server nobody here wrote, started offline on
// loopback. It lists resources without sizes; every skill is still listed,
// verified by digest and pulled byte for byte, and the deviation is named.
func TestHuggingFaceServer(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dist, folders := hfDistribution(t)
	url := peers.StartHFServer(t, dist)
	origins := []host.Origin{{Label: "hf", URL: url}}
	ctx := context.Background()
	const deviation = "server deviates from the Skills extension"

	var out, errOut bytes.Buffer
	if err := runLs(ctx, &out, &errOut, flags(), origins, false); err != nil {
		t.Fatalf("ls: %v\n%s%s", err, out.String(), errOut.String())
	}
	for name := range folders {
		if !strings.Contains(out.String(), name) {
			t.Errorf("ls does not list %s:\n%s", name, out.String())
		}
	}
	if !strings.Contains(errOut.String(), deviation) || !strings.Contains(errOut.String(), "have no size") {
		t.Errorf("ls does not name the server's deviation:\n%s", errOut.String())
	}

	out.Reset()
	errOut.Reset()
	if err := runVerify(ctx, &out, &errOut, flags(), origins, false); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	if want := "5 skills verified, 0 failed"; !strings.Contains(out.String(), want) || len(folders) != 5 {
		t.Errorf("verify: want %q for %d skills:\n%s", want, len(folders), out.String())
	}

	// load delivers what the model reads, byte for byte.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	out.Reset()
	errOut.Reset()
	if err := runLoad(ctx, &out, &errOut, flags(), origins, "hf:pdf-processing", "", true); err != nil {
		t.Fatalf("load: %v\n%s", err, errOut.String())
	}
	md, _ := os.ReadFile(filepath.Join(folders["pdf-processing"], "SKILL.md"))
	doc, _ := skill.Parse(md)
	if got, ok := host.UntrustedContent(out.String()); !ok || got != string(doc.Body) {
		t.Errorf("load of hf:pdf-processing is not SKILL.md's body byte for byte:\n%s", out.String())
	}

	to := t.TempDir()
	out.Reset()
	errOut.Reset()
	if err := runPull(ctx, &out, &errOut, flags(), origins, to, false, false); err != nil {
		t.Fatalf("pull: %v\n%s%s", err, out.String(), errOut.String())
	}
	// form-filling sits inside pdf-processing: it is written once, with it.
	if !strings.Contains(out.String(), "4 skills pulled, 0 failed") || !strings.Contains(out.String(), "hf:form-filling: inside hf:pdf-processing, written with it") {
		t.Errorf("pull:\n%s", out.String())
	}
	files := 0
	for name, src := range folders {
		if nestedIn(src, folders) {
			continue // its files are compared under the folder that holds it
		}
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			want, _ := os.ReadFile(p)
			got, err := os.ReadFile(filepath.Join(to, name, rel))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("pulled %s/%s differs from HF_SKILLS_DIR (%v)", name, rel, err)
			}
			files++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 10 {
		t.Errorf("compared only %d files", files)
	}
}

// nestedIn reports whether the skill folder src lies inside another of the
// folders.
func nestedIn(src string, folders map[string]string) bool {
	for _, other := range folders {
		if other != src && strings.HasPrefix(src, other+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
