package ocisource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/ocitest"
)

// TestPlainHTTPOnlyOnLoopback: HTTPS unless the registry is on a loopback
// address or --plain-http asks for HTTP.
func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for _, c := range []struct {
		ref   string
		flag  bool
		plain bool
	}{
		{"oci://127.0.0.1:5000/a", false, true},
		{"oci://localhost:5000/a", false, true},
		{"oci://[::1]:5000/a", false, true},
		{"oci://ghcr.io/a/b", false, false},
		{"oci://10.0.0.1:5000/a", false, false},
		{"oci://127.0.0.1.example.com/a", false, false},
		{"oci://registry.internal:5000/a", true, true},
	} {
		r, err := ParseRef(c.ref)
		if err != nil {
			t.Fatal(err)
		}
		repo, err := repository(r, &Options{PlainHTTP: c.flag})
		if err != nil {
			t.Fatal(err)
		}
		if repo.PlainHTTP != c.plain {
			t.Errorf("%s (--plain-http=%v): plain HTTP %v, want %v", c.ref, c.flag, repo.PlainHTTP, c.plain)
		}
	}
}

// TestCredentialsFromEnvironment: the environment's credentials go to the
// reference's registry only.
func TestCredentialsFromEnvironment(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv(EnvUsername, "robot")
	t.Setenv(EnvPassword, "s3cret")
	r, _ := ParseRef("oci://registry.example.com/team/skills:v1")
	repo, err := repository(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := repo.Client.(*auth.Client)
	got, err := client.Credential(context.Background(), "registry.example.com")
	if err != nil || got.Username != "robot" || got.Password != "s3cret" {
		t.Errorf("credential for the registry: %+v %v", got, err)
	}
	if got, _ := client.Credential(context.Background(), "evil.example.com"); got != auth.EmptyCredential {
		t.Errorf("credential sent to another host: %+v", got)
	}
}

// TestCredentialsFromDockerConfig: without the environment variables, the
// Docker configuration file (docker login) supplies them.
func TestCredentialsFromDockerConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv(EnvUsername, "")
	t.Setenv(EnvPassword, "")
	// base64("robot:s3cret")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{"registry.example.com":{"auth":"cm9ib3Q6czNjcmV0"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ := ParseRef("oci://registry.example.com/team/skills:v1")
	repo, err := repository(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.Client.(*auth.Client).Credential(context.Background(), "registry.example.com")
	if err != nil || got.Username != "robot" || got.Password != "s3cret" {
		t.Errorf("credential from the Docker configuration: %+v %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := repository(r, nil); err == nil || !strings.Contains(err.Error(), EnvUsername) {
		t.Errorf("a broken Docker configuration: %v", err)
	}
}

// TestReferrerTagsBound: a repository with more tags than maxTags is not
// listed to the end; each manifest's referrers are asked instead, and a
// signature is still found.
func TestReferrerTagsBound(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	cat, err := catalog.OpenDir("../../examples/skills", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	r, _ := ParseRef("oci://" + reg.Host + "/bound/skills:v1")
	sign := func(s *catalog.Skill) ([]byte, error) { return []byte(`{"bundle":"` + s.Path + `"}`), nil }
	for _, tag := range []string{"v1", "v2", "v3"} {
		r.Reference.Reference = tag
		if _, err := Push(ctx, cat, r, &Options{Sign: sign}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bound := range []int{4 * MaxSkills, 2} {
		maxTags = bound
		src, err := Open(ctx, r, nil, nil)
		maxTags = 4 * MaxSkills
		if err != nil {
			t.Fatal(err)
		}
		if bound == 2 && src.repo.referrerTags != nil {
			t.Errorf("a repository of more than %d tags was listed to the end", bound)
		}
		if bound > 2 && src.repo.referrerTags == nil {
			t.Error("the referrer tags were not listed")
		}
		for _, s := range src.Catalog().Skills() {
			if want := `{"bundle":"` + s.Path + `"}`; string(s.Signature) != want {
				t.Errorf("bound %d: %s carries %q, want %q", bound, s.Path, s.Signature, want)
			}
		}
	}
}
