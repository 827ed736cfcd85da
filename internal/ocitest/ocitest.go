// Package ocitest runs a real OCI registry for tests: distribution's
// registry from the Debian package docker-registry, storing blobs in a
// temporary directory and listening on a free loopback port.
package ocitest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Binary is where Debian installs distribution's registry.
const Binary = "/usr/bin/docker-registry"

// Registry is one running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of a reference.
	Host string
	// Storage is the registry's filesystem storage root; blobs live under
	// docker/registry/v2/blobs/sha256/XX/DIGEST/data.
	Storage string

	log string
}

// Start runs a registry until the test ends. A registry that cannot run
// fails the test saying why.
func Start(t testing.TB) *Registry {
	t.Helper()
	return start(t, "", "", false)
}

// StartCached runs a registry with the in-memory blob descriptor cache of
// the Debian package's configuration, as deployed: for benchmarks. Its
// sizes come from the cache, so a blob tampered with in storage is sent
// at its first length; tests that tamper use Start.
func StartCached(t testing.TB) *Registry {
	t.Helper()
	return start(t, "", "", true)
}

// StartBasicAuth runs a registry that admits only user with password,
// through HTTP basic authentication (an htpasswd file with a bcrypt hash).
func StartBasicAuth(t testing.TB, user, password string) *Registry {
	t.Helper()
	return start(t, user, password, false)
}

func start(t testing.TB, user, password string, cached bool) *Registry {
	t.Helper()
	bin := Binary
	if b := os.Getenv("SKILLPORT_REGISTRY_BIN"); b != "" {
		bin = b
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("ocitest: %v: install the Debian package docker-registry (apt-get install docker-registry), or set SKILLPORT_REGISTRY_BIN", err)
	}
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatalf("ocitest: %v", err)
	}
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", port), Storage: filepath.Join(dir, "storage"), log: filepath.Join(dir, "registry.log")}
	cfg := filepath.Join(dir, "config.yml")
	authConf := ""
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		authConf = fmt.Sprintf("auth:\n  htpasswd:\n    realm: ocitest\n    path: %s\n", htpasswd)
	}
	cache := ""
	if cached {
		cache = "  cache:\n    blobdescriptor: inmemory\n"
	}
	// The access log is on so that tests can count what a client asked.
	conf := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
%s  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, cache, r.Storage, r.Host, authConf)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	if err := cmd.Start(); err != nil {
		t.Fatalf("ocitest: starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		logf.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return r
			}
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(r.log)
			t.Fatalf("ocitest: the registry exited (%v):\n%s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(r.log)
			t.Fatalf("ocitest: the registry did not answer /v2/ within 20s:\n%s", b)
		}
	}
}

// freePort picks a free loopback port: the registry cannot listen on port 0
// and report the port it got.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BlobPath is the file holding a blob ("sha256:…") in the storage.
func (r *Registry) BlobPath(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(r.Storage, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}

// Requests returns the access log lines naming method ("PUT", "POST",
// "GET", "HEAD", or "" for every one) logged so far.
func (r *Registry) Requests(method string) ([]string, error) {
	b, err := os.ReadFile(r.log)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		// The access log is in the combined log format: "METHOD /path HTTP/1.1".
		if i := strings.Index(l, `"`+method); i >= 0 && strings.Contains(l, " HTTP/1.") {
			out = append(out, l[i:])
		}
	}
	return out, nil
}
