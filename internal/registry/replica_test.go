package registry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/skillserver"
)

// replica is a registry Source served by an MCP server, with a connected
// go-sdk client counting list_changed notifications.
type replica struct {
	src     *registry.Source
	s       *mcp.Server
	cs      *mcp.ClientSession
	changed chan struct{}
}

func startReplica(t *testing.T, dsn string) *replica {
	t.Helper()
	r := &replica{src: openReplica(t, dsn), changed: make(chan struct{}, 100)}
	s, _, err := skillserver.New(&mcp.Implementation{Name: "replica", Version: "0"}, r.src, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { r.changed <- struct{}{} },
	})
	r.cs, err = c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cs.Close(); ss.Close() })
	return r
}

// read reads uri in a new session: go-sdk clients cache reads for a
// while, and the test is about what the replica serves.
func (r *replica) read(t *testing.T, uri string) (string, error) {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := r.s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	c := res.Contents[0]
	if c.Text != "" {
		return c.Text, nil
	}
	return string(c.Blob), nil
}

// drain forgets notifications received so far.
func (r *replica) drain() {
	for {
		select {
		case <-r.changed:
		default:
			return
		}
	}
}

// generation is the registry's current generation.
func generation(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var g int64
	if err := conn.QueryRow(context.Background(), `SELECT generation FROM registry_state`).Scan(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// follow waits until the replica serves generation gen and has sent
// list_changed since the last drain.
func (r *replica) follow(t *testing.T, gen int64, what string) {
	t.Helper()
	waitFor(t, what, func() bool { return r.src.Generation() == gen })
	r.waitChanged(t, what)
}

func (r *replica) waitChanged(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no list_changed within 10s after %s", what)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const guide = "skill://code-review/references/CHECKLIST.md"

func TestReplicasFollowChanges(t *testing.T) {
	dsn := newDB(t)
	conn := connect(t, dsn)
	ctx := context.Background()
	dir := copyTree(t, examples)
	publish(t, conn, openCat(t, dir, ""), nil)
	r1, r2 := startReplica(t, dsn), startReplica(t, dsn)
	v1, err := r1.read(t, guide)
	if err != nil {
		t.Fatal(err)
	}

	// Publish a change: both replicas notify and serve the new bytes.
	r1.drain()
	r2.drain()
	os.WriteFile(filepath.Join(dir, "code-review", "references", "CHECKLIST.md"), []byte("# Checklist v2\n"), 0o644)
	res := publish(t, conn, openCat(t, dir, ""), &registry.PublishOptions{Publisher: "carol"})
	if len(res.Changed) != 1 || res.Changed[0].Path != "code-review" {
		t.Fatalf("publish: %+v", res)
	}
	r1.follow(t, res.Generation, "a publish")
	r1.drain()
	// A change inside a nested skill changes it and the skill around it;
	// the replica's incremental snapshot must equal a fresh catalog.
	os.WriteFile(filepath.Join(dir, "pdf-processing", "form-filling", "NOTES.md"), []byte("nested notes\n"), 0o644)
	os.RemoveAll(filepath.Join(dir, "git-workflow", "scripts"))
	cat := openCat(t, dir, "")
	res = publish(t, conn, cat, &registry.PublishOptions{Publisher: "carol"})
	if len(res.Changed) != 3 {
		t.Fatalf("publish: %+v", res)
	}
	for i, r := range []*replica{r1, r2} {
		r.follow(t, res.Generation, "a publish")
		sameContent(t, cat, r.src.Snapshot())
		if got, err := r.read(t, guide); err != nil || got != "# Checklist v2\n" {
			t.Errorf("replica %d after the publish: %q, %v", i+1, got, err)
		}
	}

	// Roll back: both serve version 1 again.
	r1.drain()
	r2.drain()
	if err := registry.Rollback(ctx, conn, "code-review", 1, "dave"); err != nil {
		t.Fatal(err)
	}
	gen := generation(t, conn)
	for i, r := range []*replica{r1, r2} {
		r.follow(t, gen, "a rollback")
		if got, _ := r.read(t, guide); got != v1 {
			t.Errorf("replica %d after rollback: %q, want version 1", i+1, got)
		}
	}
	diff, err := registry.Diff(ctx, conn, "code-review", 1, 2)
	if err != nil || len(diff) != 1 || diff[0].Path != "references/CHECKLIST.md" || diff[0].Change != "changed" {
		t.Errorf("diff 1..2: %+v, %v", diff, err)
	}

	// Yank version 1 (current): nothing earlier is left, so the skill falls
	// back to its good later version 2 rather than stop being served
	// (yank --help); version 1 can no longer be rolled back to.
	r1.drain()
	r2.drain()
	if err := registry.Yank(ctx, conn, "code-review", 1, "erin", "leaks a token"); err != nil {
		t.Fatal(err)
	}
	gen = generation(t, conn)
	for i, r := range []*replica{r1, r2} {
		r.follow(t, gen, "a yank")
		if got, _ := r.read(t, guide); got != "# Checklist v2\n" {
			t.Errorf("replica %d after yanking version 1: %q, want version 2", i+1, got)
		}
	}
	if err := registry.Rollback(ctx, conn, "code-review", 1, "frank"); err == nil || !strings.Contains(err.Error(), "yanked") {
		t.Errorf("rollback to a yanked version: %v", err)
	}
	evs, err := registry.Events(ctx, conn, "code-review", 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range evs {
		actions = append(actions, e.Action+":"+e.Who+":"+e.Outcome)
	}
	// The refused rollback is recorded too (docs/registry-governance.md).
	if got := strings.Join(actions, " "); got != "publish:unknown:ok publish:carol:ok rollback:dave:ok yank:erin:ok rollback:frank:refused" {
		t.Errorf("recorded events: %s", got)
	}
}

// TestReplicaSurvivesDatabase: the database dies, replicas keep serving
// their last snapshot and say they are not ready; it comes back, and
// they catch up on a change made while they were disconnected.
func TestReplicaSurvivesDatabase(t *testing.T) {
	dsn := newDB(t)
	conn := connect(t, dsn)
	dir := copyTree(t, examples)
	publish(t, conn, openCat(t, dir, ""), nil)
	r1, r2 := startReplica(t, dsn), startReplica(t, dsn)
	want, _ := r1.read(t, guide) // now cached on r1 only
	ctx := context.Background()

	ep, err := endpoint.New(http.NotFoundHandler(), &endpoint.Options{Source: r1.src, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		ep.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("/readyz with the database up: %d %s", code, body)
	}

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			pg.Restart()
		}
	}()
	for i, r := range []*replica{r1, r2} {
		waitFor(t, "not ready", func() bool { return r.src.Ready(ctx) != nil })
		if got := len(r.src.Snapshot().Skills()); got != 5 {
			t.Errorf("replica %d serves %d skills with the database down, want 5", i+1, got)
		}
		res, err := r.cs.ListResources(ctx, nil)
		if err != nil || len(res.Resources) == 0 {
			t.Errorf("replica %d listing with the database down: %v", i+1, err)
		}
	}
	if got, err := r1.read(t, guide); err != nil || got != want {
		t.Errorf("cached content with the database down: %q, %v", got, err)
	}
	if code, body := readyz(); code != 503 || !strings.Contains(body, "serving the last snapshot") {
		t.Errorf("/readyz with the database down: %d %s, want 503 saying the last snapshot is served", code, body)
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	for _, r := range []*replica{r1, r2} {
		waitFor(t, "ready again", func() bool { return r.src.Ready(ctx) == nil })
	}
	if code, body := readyz(); code != 200 {
		t.Errorf("/readyz after the database came back: %d %s", code, body)
	}
	// Keep the replicas out while a change is published, so that the
	// notification is lost to them: they must re-read on reconnect.
	conn = connect(t, dsn)
	admin := connect(t, pg.DSN)
	db := conn.Config().Database
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2`, db, conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{r1, r2} {
		waitFor(t, "not ready", func() bool { return r.src.Ready(ctx) != nil })
	}
	r1.drain()
	r2.drain()
	os.WriteFile(filepath.Join(dir, "code-review", "references", "CHECKLIST.md"), []byte("# while you were away\n"), 0o644)
	res := publish(t, conn, openCat(t, dir, ""), nil)
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	for i, r := range []*replica{r1, r2} {
		r.follow(t, res.Generation, "catching up")
		if got, err := r.read(t, guide); err != nil || got != "# while you were away\n" {
			t.Errorf("replica %d after catching up: %q, %v", i+1, got, err)
		}
	}
}
