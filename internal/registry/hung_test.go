package registry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/pgtest"
	"github.com/skillport/skillport/internal/registry"
)

// TestHungDatabase stops the replica's PostgreSQL with SIGSTOP, the way a
// hung database host looks: /readyz turns 503 within the readiness ping's
// deadline, saying nothing of the database's user, name or address, and an
// uncached read fails with a clear error within the query timeout instead
// of hanging. After SIGCONT the replica is ready again.
func TestHungDatabase(t *testing.T) {
	// A server of its own: pausing the package's shared one would stall
	// the other tests.
	own, err := pgtest.Start(t.TempDir())
	if err != nil {
		t.Fatalf("the test needs PostgreSQL and it could not start: %v", err)
	}
	t.Cleanup(func() { own.Stop() })
	dsn, err := own.NewDatabase("hung")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, connect(t, dsn), openCat(t, copyTree(t, examples), ""), nil)
	const timeout = time.Second
	// A cache of one byte holds nothing: every read goes to the database.
	src, err := registry.Open(context.Background(), dsn, &registry.Options{CacheBytes: 1, QueryTimeout: timeout, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ep, err := endpoint.New(http.NotFoundHandler(), &endpoint.Options{Source: src, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(ep)
	t.Cleanup(hs.Close)
	readyz := func() (int, string) {
		resp, err := http.Get(hs.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("readyz before: %d %s", code, body)
	}
	f := src.Snapshot().File(guide)
	if f == nil {
		t.Fatalf("no %s", guide)
	}

	if err := own.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			own.Resume()
		}
	}
	t.Cleanup(resume)

	start := time.Now()
	code, body := readyz()
	if took := time.Since(start); code == 200 || took > registry.ReadyTimeout+2*time.Second {
		t.Errorf("readyz with the database stopped: %d after %s: %s", code, took, body)
	}
	for _, secret := range []string{"postgres", "hung", "127.0.0.1", "user="} {
		if strings.Contains(body, secret) {
			t.Errorf("readyz names the database (%q): %s", secret, body)
		}
	}
	start = time.Now()
	_, err = src.Snapshot().ReadFile(context.Background(), f)
	if took := time.Since(start); err == nil || took > timeout+2*time.Second || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("uncached read with the database stopped: %v after %s", err, took)
	}

	resume()
	waitFor(t, "readyz after SIGCONT", func() bool { code, _ := readyz(); return code == 200 })
	if _, err := src.Snapshot().ReadFile(context.Background(), f); err != nil {
		t.Errorf("read after SIGCONT: %v", err)
	}
}
