package ocisource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/ocitest"
	"github.com/skillport/skillport/skill"
)

const examples = "../../examples/skills"

func ref(t *testing.T, s string) ocisource.Ref {
	t.Helper()
	r, err := ocisource.ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openDir(t testing.TB, dir string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// fileSet is every published file of a catalog: URI to digest and size.
func fileSet(cat *catalog.Catalog) map[string]string {
	m := map[string]string{}
	for _, s := range cat.Skills() {
		for _, f := range s.Files {
			m[f.URI] = f.Digest + " " + f.MIMEType
		}
		m[s.URI+"#skill"] = s.Path + " " + s.Frontmatter.Description()
	}
	return m
}

// pushExamples starts a registry and pushes examples/skills to
// team/skills:v1 in it.
func pushExamples(t *testing.T) (*ocitest.Registry, *catalog.Catalog, ocisource.Ref, *ocisource.PushResult) {
	t.Helper()
	reg := ocitest.Start(t)
	dir := openDir(t, examples)
	r := ref(t, "oci://"+reg.Host+"/team/skills:v1")
	res, err := ocisource.Push(context.Background(), dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg, dir, r, res
}

// TestPushThenOpenIsTheSameCatalog pushes the example tree and reads it
// back by tag and by digest: the same skills, URIs and digests, the same
// bytes; a second push of the unchanged tree uploads no blob.
func TestPushThenOpenIsTheSameCatalog(t *testing.T) {
	reg, dir, r, res := pushExamples(t)
	ctx := context.Background()
	if res.Skills != len(dir.Skills()) || res.Uploaded == 0 || res.Present != 0 {
		t.Fatalf("first push: %+v", res)
	}
	for _, name := range []string{"oci://" + reg.Host + "/team/skills:v1", "oci://" + reg.Host + "/team/skills@" + res.Digest} {
		src, err := ocisource.Open(ctx, ref(t, name), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if src.Digest() != res.Digest {
			t.Errorf("%s resolved to %s, pushed %s", name, src.Digest(), res.Digest)
		}
		want, got := fileSet(dir), fileSet(src.Catalog())
		if len(want) == 0 || !equal(want, got) {
			t.Errorf("%s: catalog differs from the directory's:\nwant %v\ngot  %v", name, want, got)
		}
		for _, s := range src.Catalog().Skills() {
			for _, f := range s.Files {
				b, err := src.Catalog().ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				disk, err := os.ReadFile(filepath.Join(examples, dirFile(dir, f.URI)))
				if err != nil || !bytes.Equal(b, disk) {
					t.Errorf("%s: served bytes differ from the source (%v)", f.URI, err)
				}
			}
		}
	}

	before, _ := reg.Requests("PUT")
	res2, err := ocisource.Push(ctx, dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := reg.Requests("PUT")
	if res2.Uploaded != 0 || res2.Present != res.Uploaded || res2.Digest != res.Digest {
		t.Errorf("second push of an unchanged tree: %+v, first %+v", res2, res)
	}
	// Only the index is put again (the tag is rewritten); no blob upload.
	var blobPuts []string
	for _, l := range after[len(before):] {
		if strings.Contains(l, "/blobs/") {
			blobPuts = append(blobPuts, l)
		}
	}
	posts, _ := reg.Requests("POST")
	if len(blobPuts) != 0 || len(posts) != res.Uploaded {
		t.Errorf("second push uploaded blobs: %d PUTs %q, %d POSTs (first push %d)", len(blobPuts), blobPuts, len(posts), res.Uploaded)
	}
}

// dirFile maps a file URI of the directory catalog to its source path.
func dirFile(cat *catalog.Catalog, uri string) string {
	return cat.File(uri).Path
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestOneSkillIsOneArtifact pushes a single skill's folder: the tag names
// its manifest, whose layer digests are the files' digests.
func TestOneSkillIsOneArtifact(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	dir := openDir(t, filepath.Join(examples, "code-review"))
	r := ref(t, "oci://"+reg.Host+"/one:1")
	res, err := ocisource.Push(ctx, dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := remote.NewRepository(reg.Host + "/one")
	repo.PlainHTTP = true
	desc, b, err := oras_fetch(ctx, repo, "1")
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != res.Digest || desc.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("tag names %s %s", desc.MediaType, desc.Digest)
	}
	var m ocispec.Manifest
	json.Unmarshal(b, &m)
	if m.ArtifactType != ocisource.ArtifactType || len(m.Layers) != len(dir.Skills()[0].Files) {
		t.Fatalf("manifest %s", b)
	}
	for i, f := range dir.Skills()[0].Files {
		if m.Layers[i].Digest.String() != f.Digest || m.Layers[i].Annotations[ocispec.AnnotationTitle] != f.Path {
			t.Errorf("layer %d: %v, file %s %s", i, m.Layers[i], f.Path, f.Digest)
		}
	}
	src, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(fileSet(dir), fileSet(src.Catalog())) {
		t.Errorf("one skill: %v, want %v", fileSet(src.Catalog()), fileSet(dir))
	}
}

func oras_fetch(ctx context.Context, repo *remote.Repository, ref string) (ocispec.Descriptor, []byte, error) {
	desc, err := repo.Resolve(ctx, ref)
	if err != nil {
		return desc, nil, err
	}
	b, err := content.FetchAll(ctx, repo, desc)
	return desc, b, err
}

// TestTamperedBlobIsRefused overwrites a file's blob in the registry's
// storage, same length and then another length: Open refuses naming it.
func TestTamperedBlobIsRefused(t *testing.T) {
	reg, dir, r, _ := pushExamples(t)
	ctx := context.Background()
	f := dir.Skills()[0].Files[0]
	orig, err := os.ReadFile(reg.BlobPath(f.Digest))
	if err != nil {
		t.Fatal(err)
	}
	for _, forged := range [][]byte{append(bytes.ToUpper(orig[:len(orig)-1]), 'X'), append(orig, " more"...)} {
		if err := os.WriteFile(reg.BlobPath(f.Digest), forged, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ocisource.Open(ctx, r, nil, nil)
		if err == nil || !strings.Contains(err.Error(), f.Digest) || !strings.Contains(err.Error(), dir.Skills()[0].Path+"/SKILL.md") {
			t.Errorf("a forged blob of %d bytes: %v", len(forged), err)
		}
	}
}

// titled returns d named title.
func titled(d ocispec.Descriptor, title string) ocispec.Descriptor {
	d.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	return d
}

// TestDeclaredSizesAreCheckedBeforeFetching pushes manifests declaring a
// layer over the skill limit, too many files, a bad title, and a size the
// blob does not have. The registry holds every blob (it refuses manifests
// naming missing ones): the limits are refused without fetching any layer,
// the lie when the blob arrives, naming it.
func TestDeclaredSizesAreCheckedBeforeFetching(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	repo, _ := remote.NewRepository(reg.Host + "/hostile")
	repo.PlainHTTP = true
	push := func(mediaType string, b []byte, title string) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(mediaType, b)
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if title != "" {
			d.Annotations = map[string]string{ocispec.AnnotationTitle: title}
		}
		return d
	}
	cfgDesc := push(ocisource.ConfigMediaType, []byte(`{"path":"big"}`), "")
	skillMD := push(ocisource.FileMediaType, []byte("---\nname: big\ndescription: d\n---\n"), "SKILL.md")
	big := push(ocisource.FileMediaType, make([]byte, skill.MaxBytes+1), "big.bin")
	half := push(ocisource.FileMediaType, make([]byte, skill.MaxBytes/2), "a.bin")
	half2 := half
	half2.Annotations = map[string]string{ocispec.AnnotationTitle: "b.bin"}
	many := []ocispec.Descriptor{skillMD}
	// One blob under 512 names: the count is refused before sizes matter.
	one := push(ocisource.FileMediaType, []byte("x"), "")
	for i := range skill.MaxFiles {
		l := one
		l.Annotations = map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("f/%d.txt", i)}
		many = append(many, l)
	}
	evil := push(ocisource.FileMediaType, []byte("../"), "../etc/passwd")
	lying := push(ocisource.FileMediaType, []byte("twenty bytes exactly"), "lie.txt")
	lying.Size = 5
	for _, c := range []struct {
		name    string
		layers  []ocispec.Descriptor
		want    string
		fetches bool
	}{
		{"over16MiB", []ocispec.Descriptor{skillMD, big}, big.Digest.String() + " (big.bin) declares 16777217 bytes: the skill's files would exceed the limit of 16777216 bytes; refused before fetching", false},
		{"total", []ocispec.Descriptor{skillMD, half, half2}, "(b.bin) declares 8388608 bytes", false},
		{"files", many, "513 files exceed the skill limit of 512", false},
		{"title", []ocispec.Descriptor{skillMD, evil}, `title "../etc/passwd" is not a relative`, false},
		{"duplicate", []ocispec.Descriptor{skillMD, skillMD}, `file "SKILL.md" appears twice`, false},
		{"fileAndFolder", []ocispec.Descriptor{skillMD, titled(one, "x"), titled(one, "x/y")}, "big/x is a file and also the folder of big/x/y; refused", true},
		{"lyingSize", []ocispec.Descriptor{skillMD, lying}, "blob " + lying.Digest.String() + " (big/lie.txt)", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocisource.ArtifactType, Config: cfgDesc, Layers: c.layers}
			b, _ := json.Marshal(m)
			d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b)
			if err := repo.PushReference(ctx, d, bytes.NewReader(b), c.name); err != nil {
				t.Fatal(err)
			}
			before, _ := reg.Requests("GET")
			_, err := ocisource.Open(ctx, ref(t, "oci://"+reg.Host+"/hostile:"+c.name), nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			after, _ := reg.Requests("GET")
			fetched := 0
			for _, l := range after[len(before):] {
				if strings.Contains(l, "/blobs/") && !strings.Contains(l, cfgDesc.Digest.String()) {
					fetched++
				}
			}
			if !c.fetches && fetched > 0 {
				t.Errorf("%d blobs were fetched before the sizes were checked", fetched)
			}
		})
	}
}

// TestBasicAuth pushes to and serves from a registry that requires basic
// authentication, with the credentials in the environment; without them
// the registry's refusal is reported.
func TestBasicAuth(t *testing.T) {
	reg := ocitest.StartBasicAuth(t, "robot", "s3cret")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	ctx := context.Background()
	dir := openDir(t, examples)
	r := ref(t, "oci://"+reg.Host+"/private/skills:v1")
	t.Setenv(ocisource.EnvUsername, "robot")
	t.Setenv(ocisource.EnvPassword, "wrong")
	if _, err := ocisource.Push(ctx, dir, r, nil); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), ocisource.EnvPassword) {
		t.Fatalf("push with a wrong password: %v", err)
	}
	t.Setenv(ocisource.EnvPassword, "s3cret")
	if _, err := ocisource.Push(ctx, dir, r, nil); err != nil {
		t.Fatal(err)
	}
	src, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(fileSet(dir), fileSet(src.Catalog())) {
		t.Error("the catalog served through basic auth differs from the folder's")
	}
	t.Setenv(ocisource.EnvUsername, "")
	t.Setenv(ocisource.EnvPassword, "")
	if _, err := ocisource.Open(ctx, r, nil, nil); err == nil || !strings.Contains(err.Error(), "log in with docker login "+reg.Host) {
		t.Errorf("open without credentials: %v", err)
	}
}

// TestMovedTagIsServedAfterUpdate pushes a tree, opens its tag and a pin
// of its digest, changes one file and pushes again: Update serves the new
// digest fetching only the changed blob, the pin does not move, and an
// Update with the tag unchanged fetches nothing.
func TestMovedTagIsServedAfterUpdate(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(examples)); err != nil {
		t.Fatal(err)
	}
	dir := openDir(t, tree)
	r := ref(t, "oci://"+reg.Host+"/team/skills:main")
	first, err := ocisource.Push(ctx, dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := ocisource.Open(ctx, ref(t, "oci://"+reg.Host+"/team/skills@"+first.Digest), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, err := tag.Update(ctx); changed || err != nil {
		t.Fatalf("update of an unchanged tag: %v %v", changed, err)
	}
	md := filepath.Join(tree, "code-review", "SKILL.md")
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(md, append(b, "\nOne more line.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := openDir(t, tree)
	second, err := ocisource.Push(ctx, dir2, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Uploaded != 1 { // the new SKILL.md; the frontmatter, so the config, did not change
		t.Errorf("second push uploaded %d blobs, want 1", second.Uploaded)
	}
	before, _ := reg.Requests("GET")
	c, changed, err := tag.Update(ctx)
	if err != nil || !changed || tag.Digest() != second.Digest {
		t.Fatalf("update after the tag moved: changed %v, digest %s want %s, %v", changed, tag.Digest(), second.Digest, err)
	}
	after, _ := reg.Requests("GET")
	var fileGets []string
	for _, l := range after[len(before):] {
		if strings.Contains(l, "/blobs/") {
			fileGets = append(fileGets, l)
		}
	}
	// Manifests already checked are not fetched again: the changed
	// skill's manifest, and of the files only the new SKILL.md (the
	// config is not read: the manifest names the skill path).
	newMD := dir2.File("skill://code-review/SKILL.md").Digest
	files := 0
	for _, l := range fileGets {
		if strings.Contains(l, newMD) {
			files++
		}
	}
	manifests := 0
	for _, l := range after[len(before):] {
		if strings.Contains(l, "/manifests/sha256:") {
			manifests++
		}
	}
	if files != 1 || len(fileGets) != 1 || manifests != 2 {
		t.Errorf("update fetched %d blobs (want the changed skill's SKILL.md) and %d manifests (want the index and the changed skill's):\n%s", len(fileGets), manifests, strings.Join(after[len(before):], "\n"))
	}
	if !equal(fileSet(c), fileSet(dir2)) || !equal(fileSet(tag.Catalog()), fileSet(dir2)) {
		t.Error("the updated catalog differs from the pushed tree")
	}
	// Watch does the same every poll: the tag moves back to the first
	// push, and fn receives its catalog.
	if err := os.WriteFile(md, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ocisource.Push(ctx, openDir(t, tree), r, nil); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan *catalog.Catalog, 1)
	go tag.Watch(wctx, 20*time.Millisecond, func(c *catalog.Catalog) { got <- c })
	select {
	case c := <-got:
		if !equal(fileSet(c), fileSet(dir)) || tag.Digest() != first.Digest {
			t.Error("Watch delivered another catalog than the first push's")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not deliver the moved tag's catalog within 30s")
	}
	if _, changed, _ := pin.Update(ctx); changed || pin.Digest() != first.Digest || !equal(fileSet(pin.Catalog()), fileSet(dir)) {
		t.Error("a digest reference moved")
	}
}

// TestIndexBounds: the bytes an index's manifests and configs declare,
// and the bytes of all its files, are bounded before they are fetched;
// an index naming one skill path twice is refused.
func TestIndexBounds(t *testing.T) {
	reg, dir, r, res := pushExamples(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		o    *ocisource.Options
		want string
	}{
		{"metadata", &ocisource.Options{MaxMetadata: 500}, "declare more than 500 bytes; refused before fetching"},
		{"files", &ocisource.Options{MaxTotal: 100}, "the files total more than 100 bytes; refused before fetching"},
	} {
		before, _ := reg.Requests("GET")
		_, err := ocisource.Open(ctx, r, c.o, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		after, _ := reg.Requests("GET")
		for _, l := range after[len(before):] {
			for _, s := range dir.Skills() {
				for _, f := range s.Files {
					if strings.Contains(l, f.Digest) {
						t.Errorf("%s: a file was fetched: %s", c.name, l)
					}
				}
			}
		}
	}

	repo, _ := remote.NewRepository(reg.Host + "/team/skills")
	repo.PlainHTTP = true
	_, b, err := oras_fetch(ctx, repo, res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Manifests = append(idx.Manifests, idx.Manifests[0])
	b, _ = json.Marshal(idx)
	d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, b)
	if err := repo.PushReference(ctx, d, bytes.NewReader(b), "twice"); err != nil {
		t.Fatal(err)
	}
	_, err = ocisource.Open(ctx, ref(t, "oci://"+reg.Host+"/team/skills:twice"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "both hold the skill "+dir.Skills()[0].Path) {
		t.Errorf("an index naming a skill twice: %v", err)
	}
}

// TestSignatureReferrerBounds: a signature referrer declaring a bundle
// over the bundle limit is refused before the bundle is fetched, and a
// bundle whose bytes are not its digest's is refused, naming it.
func TestSignatureReferrerBounds(t *testing.T) {
	reg, _, r, _ := pushExamples(t)
	ctx := context.Background()
	repo, err := remote.NewRepository(reg.Host + "/team/skills")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	top, err := repo.Resolve(ctx, "v1")
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
	subject := idx.Manifests[0]
	bundle := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	bd := content.NewDescriptorFromBytes(ocisource.SignatureArtifactType, bundle)
	if err := repo.Push(ctx, bd, bytes.NewReader(bundle)); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(ctx, ocispec.DescriptorEmptyJSON, bytes.NewReader(ocispec.DescriptorEmptyJSON.Data)); err != nil {
		t.Fatal(err)
	}
	attach := func(layer ocispec.Descriptor, when string) {
		m := ocispec.Manifest{
			Versioned:    specs.Versioned{SchemaVersion: 2},
			MediaType:    ocispec.MediaTypeImageManifest,
			ArtifactType: ocisource.SignatureArtifactType,
			Config:       ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: ocispec.DescriptorEmptyJSON.Digest, Size: 2},
			Layers:       []ocispec.Descriptor{layer},
			Subject:      &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
			Annotations:  map[string]string{ocispec.AnnotationCreated: when},
		}
		mb, _ := json.Marshal(m)
		if err := repo.Push(ctx, content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, mb), bytes.NewReader(mb)); err != nil {
			t.Fatal(err)
		}
	}
	attach(ocispec.Descriptor{MediaType: ocisource.SignatureArtifactType, Digest: bd.Digest, Size: bd.Size}, "2030-01-01T00:00:00Z")
	src, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	signed := 0
	for _, s := range src.Catalog().Skills() {
		if bytes.Equal(s.Signature, bundle) {
			signed++
		}
	}
	if signed != 1 {
		t.Errorf("%d skills carry the attached bundle, want 1", signed)
	}
	if err := os.WriteFile(reg.BlobPath(bd.Digest.String()), bytes.ToUpper(bundle), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ocisource.Open(ctx, r, nil, nil); err == nil || !strings.Contains(err.Error(), "signature bundle "+bd.Digest.String()) {
		t.Errorf("a forged bundle: %v", err)
	}
	// Newer, and declaring a megabyte: refused before fetching.
	attach(ocispec.Descriptor{MediaType: ocisource.SignatureArtifactType, Digest: bd.Digest, Size: 1 << 20}, "2031-01-01T00:00:00Z")
	if _, err := ocisource.Open(ctx, r, nil, nil); err == nil || !strings.Contains(err.Error(), "refused before fetching") || !strings.Contains(err.Error(), "signature") {
		t.Errorf("an oversized bundle: %v", err)
	}
}

// TestCacheRestartFetchesNothingUnchanged: a second Open with the same
// cache folder asks the registry only what moves (the tag and the
// referrers), never a manifest or blob by digest; a damaged cached blob
// is fetched again, not served.
func TestCacheRestartFetchesNothingUnchanged(t *testing.T) {
	reg, dir, r, _ := pushExamples(t)
	ctx := context.Background()
	cache := t.TempDir()
	o := &ocisource.Options{CacheDir: cache}
	if _, err := ocisource.Open(ctx, r, o, nil); err != nil {
		t.Fatal(err)
	}
	byDigest := func() []string {
		reqs, err := reg.Requests("GET")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range reqs {
			if strings.Contains(q, "/blobs/sha256:") || strings.Contains(q, "/manifests/sha256:") {
				out = append(out, q)
			}
		}
		return out
	}
	before := len(byDigest())
	src, err := ocisource.Open(ctx, r, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := byDigest()[before:]; len(got) != 0 {
		t.Errorf("a restart with the cache fetched %d objects by digest:\n%s", len(got), strings.Join(got, "\n"))
	}
	if !equal(fileSet(dir), fileSet(src.Catalog())) {
		t.Error("the catalog from the cache differs from the folder's")
	}
	// This registry has no referrers API: one tag listing says no skill
	// has a referrer, instead of a lookup per skill.
	all, _ := reg.Requests("GET")
	lookups := 0
	for _, q := range all[len(all)-8:] {
		if strings.Contains(q, "/manifests/sha256-") {
			lookups++
		}
	}
	if lookups > 1 {
		t.Errorf("a restart looked up the referrers of %d manifests:\n%s", lookups, strings.Join(all[len(all)-8:], "\n"))
	}
	// A cached file damaged on disk is a miss.
	f := dir.Skills()[0].Files[0]
	p := filepath.Join(cache, "blobs", "sha256", strings.TrimPrefix(f.Digest, "sha256:"))
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.ToUpper(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	before = len(byDigest())
	src, err = ocisource.Open(ctx, r, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := src.Catalog().ReadFile(src.Catalog().File(f.URI)); !bytes.Equal(got, orig) {
		t.Errorf("%s served from a damaged cache: %q", f.URI, got)
	}
	if got := byDigest()[before:]; len(got) != 1 || !strings.Contains(got[0], f.Digest) {
		t.Errorf("after damaging one cached blob, fetched %q", got)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, orig) {
		t.Error("the damaged cached blob was not replaced")
	}
}
