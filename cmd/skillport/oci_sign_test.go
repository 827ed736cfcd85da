package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/ocitest"
)

// verifyOCI runs verify against an OCI source, trusting pubs.
func verifyOCI(t *testing.T, src string, pubs ...string) (string, error) {
	t.Helper()
	return verifyOrigin(t, host.Origin{Label: "docs", OCI: src}, pubs...)
}

// skillManifests returns the manifest descriptors of the index a tag
// names, by skill path.
func skillManifests(t *testing.T, repo *remote.Repository, tag string) map[string]ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	top, err := repo.Resolve(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	b, err := content.FetchAll(ctx, repo, top)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	out := map[string]ocispec.Descriptor{}
	for _, d := range idx.Manifests {
		out[d.Annotations[ocisource.AnnotationPath]] = d
	}
	return out
}

// TestOCISignatureReferrers: the bundles skillport sign wrote travel as
// Sigstore bundle referrers of each skill's artifact; verify of the
// oci:// source checks them against --trusted-key; a second push attaches
// nothing new; a referrer moved onto another skill's artifact fails that
// skill; push --sign-key signs at push time.
func TestOCISignatureReferrers(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	keys := t.TempDir()
	priv, pub := keyFiles(t, keys, "cosign")
	_, otherPub := keyFiles(t, keys, "other")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	tree := map[string]string{
		"acme/pdf/SKILL.md":       "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"acme/pdf/scripts/run.sh": "echo pdf\n",
		"acme/docx/SKILL.md":      "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	}
	dir := writeTree(t, tree)
	if err := runSign(&bytes.Buffer{}, priv, dir); err != nil {
		t.Fatal(err)
	}
	src := "oci://" + reg.Host + "/acme/signed:v1"
	var out bytes.Buffer
	if err := runPush(context.Background(), &out, dir, src, nil); err != nil || !strings.Contains(out.String(), "; 2 signatures attached, 0 already attached") {
		t.Fatalf("push: %v %q", err, out.String())
	}
	out.Reset()
	if err := runPush(context.Background(), &out, dir, src, nil); err != nil || !strings.Contains(out.String(), "; 0 signatures attached, 2 already attached") {
		t.Errorf("second push: %v %q", err, out.String())
	}

	got, err := verifyOCI(t, src, pub)
	if err != nil || !strings.Contains(got, "signature verified") || !strings.Contains(got, "2 skills verified, 0 failed") {
		t.Errorf("verify with the signing key: %v\n%s", err, got)
	}
	if got, err := verifyOCI(t, src, otherPub); err == nil || !strings.Contains(got, "not a trusted key") {
		t.Errorf("verify with another key: %v\n%s", err, got)
	}

	// pdf's signature attached, newer, to docx's artifact.
	repo, err := remote.NewRepository(reg.Host + "/acme/signed")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	ctx := context.Background()
	ms := skillManifests(t, repo, "v1")
	var pdfSig ocispec.Manifest
	if err := repo.Referrers(ctx, ms["acme/pdf"], ocisource.SignatureArtifactType, func(refs []ocispec.Descriptor) error {
		b, err := content.FetchAll(ctx, repo, refs[0])
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &pdfSig)
	}); err != nil || len(pdfSig.Layers) != 1 {
		t.Fatalf("pdf's signature referrer: %v %+v", err, pdfSig)
	}
	if pdfSig.Config.MediaType != ocispec.MediaTypeEmptyJSON || pdfSig.Layers[0].MediaType != ocisource.SignatureArtifactType {
		t.Errorf("signature referrer layout %+v, want cosign's (empty config, one bundle layer)", pdfSig)
	}
	docx := ms["acme/docx"]
	moved := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ocisource.SignatureArtifactType,
		Config:       pdfSig.Config,
		Layers:       pdfSig.Layers,
		Subject:      &ocispec.Descriptor{MediaType: docx.MediaType, Digest: docx.Digest, Size: docx.Size},
		Annotations:  map[string]string{ocispec.AnnotationCreated: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}
	b, _ := json.Marshal(moved)
	if err := repo.Push(ctx, content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b), bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	got, err = verifyOCI(t, src, pub)
	if err == nil || !strings.Contains(got, "FAIL docs: skill://acme/docx/SKILL.md") || !strings.Contains(got, "moved to another skill") || !strings.Contains(got, "1 skill verified, 1 failed") {
		t.Errorf("verify after moving a signature: %v\n%s", err, got)
	}

	// Unsigned folder, signed at push time.
	plain := writeTree(t, tree)
	src2 := "oci://" + reg.Host + "/acme/pushsigned:v1"
	if got, err := verifyOCI(t, "oci://"+reg.Host+"/acme/signed:none", pub); err == nil {
		t.Errorf("verify of a missing tag passed:\n%s", got)
	}
	stdout, stderr, code := runCLI(t, "push", plain, src2, "--sign-key", priv)
	if code != 0 || !strings.Contains(stdout, "2 signatures attached") {
		t.Fatalf("push --sign-key: exit %d\n%s%s", code, stdout, stderr)
	}
	if got, err := verifyOCI(t, src2, pub); err != nil || !strings.Contains(got, "2 skills verified, 0 failed") {
		t.Errorf("verify of what push --sign-key signed: %v\n%s", err, got)
	}
	stdout, stderr, code = runCLI(t, "verify", "--trusted-key", pub, src2)
	if code != 0 || !strings.Contains(stdout, "signature verified") {
		t.Errorf("verify --trusted-key %s: exit %d\n%s%s", src2, code, stdout, stderr)
	}

	// Pushed unsigned, signed in the registry afterwards.
	src3 := "oci://" + reg.Host + "/acme/signlater:v1"
	if err := runPush(context.Background(), io.Discard, plain, src3, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := verifyOCI(t, src3, pub); err == nil || !strings.Contains(got, "unsigned") {
		t.Errorf("verify of an unsigned push: %v\n%s", err, got)
	}
	// Each sign makes new bundles (ECDSA signatures differ each time):
	// a second sign attaches newer ones, and the newest is read.
	for range 2 {
		stdout, stderr, code = runCLI(t, "sign", "--key", priv, src3)
		if code != 0 || !strings.Contains(stdout, "signed 2 skills of "+src3) || !strings.Contains(stdout, ": 2 signatures attached") {
			t.Errorf("sign --key %s: exit %d\n%s%s", src3, code, stdout, stderr)
		}
	}
	if got, err := verifyOCI(t, src3, pub); err != nil || !strings.Contains(got, "2 skills verified, 0 failed") {
		t.Errorf("verify after sign %s: %v\n%s", src3, err, got)
	}
}
