package skillserver_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/gittest"
	"github.com/skillport/skillport/wire"
)

// gitWork is a working repository pushing to a bare one, driven by the git binary.
type gitWork struct {
	t          *testing.T
	work, bare string
}

func newGitWork(t *testing.T, files map[string]string) *gitWork {
	t.Helper()
	g := &gitWork{t: t, work: t.TempDir(), bare: filepath.Join(t.TempDir(), "skills.git")}
	g.git("init", "-q", "--bare", "-b", "main", g.bare)
	g.git("init", "-q", "-b", "main")
	g.git("remote", "add", "origin", g.bare)
	g.commit(files)
	return g
}

func (g *gitWork) git(args ...string) {
	g.t.Helper()
	gittest.Run(g.t, g.work, args...)
}

// commit writes files, commits and pushes main.
func (g *gitWork) commit(files map[string]string) {
	g.t.Helper()
	writeTree(g.t, g.work, files)
	g.git("add", "-A")
	g.git("commit", "-q", "-m", "change")
	g.git("push", "-q", "origin", "main")
}

// gitClient connects to a served URL and reports list_changed notifications.
func gitClient(t *testing.T, url string) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	if err := mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](client, wire.MethodListSkills); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func readText(t *testing.T, cs *mcp.ClientSession, uri string) string {
	t.Helper()
	r, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("reading %s: %v", uri, err)
	}
	return r.Contents[0].Text
}

func waitChanged(t *testing.T, changed chan struct{}, what string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no notifications/resources/list_changed after %s", what)
	}
}

// TestServeGitBranchWebhook pushes to a served branch and signals it with a
// GitHub-signed webhook: clients get list_changed and the new content, and
// a cursor of the old snapshot is refused as stale.
func TestServeGitBranchWebhook(t *testing.T) {
	g := newGitWork(t, map[string]string{
		"alpha/SKILL.md": skillMD("alpha", "first"),
		"beta/SKILL.md":  skillMD("beta", "first"),
	})
	const secret = "webhook-secret-for-tests"
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, "git+file://"+g.bare+"@main", "--poll", "1h", "--page-size", "1",
		"--cache-dir", t.TempDir(), "--webhook-secret-file", secretFile)
	cs, changed := gitClient(t, srv.URL)
	page, err := mcp.CallCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](context.Background(), cs, wire.MethodListSkills, &wire.ListSkillsParams{})
	if err != nil || len(page.Skills) != 1 || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	oldDigest := ""
	for _, f := range page.Skills[0].Resources.Files {
		oldDigest = f.Digest
	}

	hook := strings.TrimSuffix(srv.URL, "/mcp") + "/hooks/git"
	post := func(body []byte, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	body := []byte(`{"ref":"refs/heads/main"}`)
	sign := func(key string, b []byte) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write(b)
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		header map[string]string
		want   int
	}{
		{"unsigned", body, nil, http.StatusUnauthorized},
		{"wrong key", body, map[string]string{"X-Hub-Signature-256": sign("guess", body)}, http.StatusUnauthorized},
		{"signature of another body", body, map[string]string{"X-Hub-Signature-256": sign(secret, []byte("{}"))}, http.StatusUnauthorized},
		{"wrong gitlab token", body, map[string]string{"X-Gitlab-Token": "guess"}, http.StatusUnauthorized},
		{"over 4 MiB", bytes.Repeat([]byte("x"), 4<<20+1), map[string]string{"X-Gitlab-Token": secret}, http.StatusRequestEntityTooLarge},
	} {
		if got := post(tc.body, tc.header); got != tc.want {
			t.Errorf("%s webhook: status %d, want %d", tc.name, got, tc.want)
		}
	}
	if res, err := http.Get(hook); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of the webhook: %v %v, want 405", res.StatusCode, err)
	}

	g.commit(map[string]string{"alpha/SKILL.md": skillMD("alpha", "second")})
	if got := post(body, map[string]string{"X-Hub-Signature-256": sign(secret, body)}); got != http.StatusAccepted {
		t.Fatalf("signed webhook: status %d, want 202", got)
	}
	waitChanged(t, changed, "a push and a GitHub webhook")
	if got := readText(t, cs, "skill://alpha/SKILL.md"); !strings.Contains(got, "description: second") {
		t.Errorf("after the push serving %q", got)
	}
	// The old cursor belongs to the old snapshot: it is refused, saying to
	// list again from the start.
	_, err = mcp.CallCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](context.Background(), cs, wire.MethodListSkills, &wire.ListSkillsParams{Cursor: page.NextCursor})
	if err == nil || !strings.Contains(err.Error(), "stale cursor: the catalog changed") {
		t.Errorf("old cursor after the branch moved: %v, want -32602 saying the catalog changed", err)
	}
	first, _ := mcp.CallCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](context.Background(), cs, wire.MethodListSkills, &wire.ListSkillsParams{})
	for _, f := range first.Skills[0].Resources.Files {
		if f.Digest == oldDigest {
			t.Errorf("alpha still listed with its old digest")
		}
	}

	// GitLab's shared-secret header works too.
	g.commit(map[string]string{"alpha/SKILL.md": skillMD("alpha", "third")})
	if got := post(body, map[string]string{"X-Gitlab-Token": secret}); got != http.StatusAccepted {
		t.Fatalf("GitLab webhook: status %d, want 202", got)
	}
	waitChanged(t, changed, "a push and a GitLab webhook")
	// cs may answer from its read cache for the result's ttlMs (SEP-2549:
	// list_changed does not invalidate reads): read from a new session.
	fresh, _ := gitClient(t, srv.URL)
	if got := readText(t, fresh, "skill://alpha/SKILL.md"); !strings.Contains(got, "description: third") {
		t.Errorf("after the second push serving %q", got)
	}
	if strings.Contains(srv.Stderr(), secret) {
		t.Error("the webhook secret appears in the server's log")
	}
}

// TestServeGitBranchPoll pushes to a served branch and waits for the poll.
func TestServeGitBranchPoll(t *testing.T) {
	g := newGitWork(t, map[string]string{"alpha/SKILL.md": skillMD("alpha", "first")})
	other := writeTree(t, t.TempDir(), map[string]string{"gamma/SKILL.md": skillMD("gamma", "from a directory")})
	srv := serveHTTP(t, "git+file://"+g.bare, "--poll", "200ms", "--cache-dir", t.TempDir(), "local="+other)
	cs, changed := gitClient(t, srv.URL)
	if got := readText(t, cs, "skill://local/gamma/SKILL.md"); !strings.Contains(got, "from a directory") {
		t.Errorf("the directory source under its prefix serves %q", got)
	}
	g.commit(map[string]string{"alpha/SKILL.md": skillMD("alpha", "second")})
	waitChanged(t, changed, "a push and a poll")
	if got := readText(t, cs, "skill://alpha/SKILL.md"); !strings.Contains(got, "description: second") {
		t.Errorf("after the push serving %q", got)
	}
}

// TestServeSkillFromTwoSources fails at start-up naming both sources.
func TestServeSkillFromTwoSources(t *testing.T) {
	g := newGitWork(t, map[string]string{"alpha/SKILL.md": skillMD("alpha", "git")})
	dir := writeTree(t, t.TempDir(), map[string]string{"alpha/SKILL.md": skillMD("alpha", "dir")})
	cmd := exec.Command(skillportBin, "serve", "--cache-dir", t.TempDir(), "git+file://"+g.bare, dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve of two sources publishing alpha started:\n%s", out)
	}
	for _, want := range []string{`"alpha"`, "git+file://" + g.bare, dir} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error does not name %s:\n%s", want, out)
		}
	}
}
