package skillserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// TestServeStdio checks that on stdio, stdout carries only JSON-RPC while
// the summary and one line per skipped skill go to stderr.
func TestServeStdio(t *testing.T) {
	dir := writeTree(t, t.TempDir(), map[string]string{
		"good/SKILL.md":       skillMD("good", "A good skill"),
		"bad/SKILL.md":        "---\nname: Not_A_Name\ndescription: x\n---\n",
		"nameless/SKILL.md":   "no frontmatter at all\n",
		"good/refs/README.md": "readme",
	})
	cmd := exec.Command(skillportBin, "serve", "--log-level", "debug", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}
{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://good/refs/README.md"}}
`)
	sc := bufio.NewScanner(stdoutPipe)
	ids := map[float64]bool{}
	for len(ids) < 3 && sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout carries a line that is not JSON-RPC: %q", sc.Text())
			continue
		}
		if id, ok := m["id"].(float64); ok {
			ids[id] = m["error"] == nil
		}
	}
	stdin.Close() // EOF on stdin ends the session and the process
	if err := cmd.Wait(); err != nil {
		t.Fatalf("skillport serve (stdio) exited with %v when stdin closed:\n%s", err, stderr.String())
	}
	if !ids[1] || !ids[2] || !ids[3] {
		t.Errorf("responses (id -> ok): %v, want 1, 2 and 3 successful", ids)
	}
	errText := stderr.String()
	if !regexp.MustCompile(`(?m)^serving 1 skill \(2 files, [0-9.]+ (B|KiB)\) from .* at stdio; 2 skills skipped \(see above\)$`).MatchString(errText) {
		t.Errorf("stderr lacks the summary line:\n%s", errText)
	}
	for _, skipped := range []string{"bad/SKILL.md", "nameless/SKILL.md"} {
		if !strings.Contains(errText, skipped) {
			t.Errorf("stderr has no line about skipped %s:\n%s", skipped, errText)
		}
	}
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve"},
		{"serve", "--stateless", examples},
		{"serve", filepath.Join(examples, "nope")},
		{"serve", "--bogus", examples},
	} {
		cmd := exec.Command(skillportBin, args...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("skillport %v: %v, want exit status 2\n%s", args, err, out)
		}
	}
}

// TestServeLiveReload edits a served directory and watches an HTTP client
// see the new digest and a list_changed notification.
func TestServeLiveReload(t *testing.T) {
	dir := writeTree(t, t.TempDir(), map[string]string{
		"live/SKILL.md":     skillMD("live", "Live"),
		"live/notes/one.md": "one",
	})
	srv := serveHTTP(t, dir)
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	if err := mcp.AddSendingCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](client, wire.MethodGetSkill); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	get := func() *wire.GetSkillResult {
		r, err := mcp.CallCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](ctx, cs, wire.MethodGetSkill, &wire.GetSkillParams{URI: "skill://live/SKILL.md"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if n := len(get().Skill.Resources.Files); n != 2 {
		t.Fatalf("%d files before the edit", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "live", "notes", "two.md"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/resources/list_changed after editing the served directory")
	}
	if n := len(get().Skill.Resources.Files); n != 3 {
		t.Errorf("%d files after adding one, want 3", n)
	}
}

// TestServeSessionFlags: --max-sessions and --session-timeout reach the
// HTTP endpoint, and misuse is a usage error.
func TestServeSessionFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--max-sessions", "5", examples},
		{"serve", "--session-timeout", "1m", examples},
		{"serve", "--http", "127.0.0.1:0", "--max-sessions", "-1", examples},
		{"serve", "--http", "127.0.0.1:0", "--session-timeout", "-1s", examples},
	} {
		out, err := exec.Command(skillportBin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--") {
			t.Errorf("skillport %v: %v, want exit status 2 naming the flag\n%s", args, err, out)
		}
	}
	srv := serveHTTP(t, examples, "--max-sessions", "2", "--session-timeout", "400ms")
	p := &httpPeer{t: t, url: srv.URL}
	first, _ := p.initialize("2025-11-25", true)
	p.initialize("2025-11-25", true)
	r := p.post(nil, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "0"}})
	if e := rpcErr(t, r); r.status != 503 || !strings.Contains(e.Message, "maximum of 2 sessions") || !strings.Contains(e.Message, "--max-sessions") {
		t.Errorf("third session with --max-sessions 2: HTTP %d %s", r.status, r.body)
	}
	// A refused initialize touches no session, so asking until one is
	// accepted waits for the idle ones to expire without keeping them
	// alive (a ping would), and without a fixed wait.
	start := time.Now()
	for {
		r := p.post(nil, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "x", "version": "0"}})
		if r.status == 200 {
			break
		}
		if r.status != 503 || time.Since(start) > 10*time.Second {
			t.Fatalf("no new session after the idle ones expired (--session-timeout 400ms, %v): HTTP %d %s", time.Since(start), r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := p.legacy(first, "2025-11-25", "ping", nil); r.status != 404 {
		t.Errorf("session idle past --session-timeout 400ms: HTTP %d, want 404", r.status)
	}
}
