package ocisource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"
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
