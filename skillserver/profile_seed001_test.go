//go:build !skillport_no_seed001

package skillserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/sandbox"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

func init() { defaultsHaveLegacy = true }

// TestExecute runs skills/execute end to end through the server and the
// bubblewrap sandbox.
func TestExecute(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST-LISTENER-REACHED\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	files := map[string]string{
		"tool/SKILL.md": skillMD("tool", "Run scripts."),
		"tool/scripts/net.py": fmt.Sprintf(`import socket, sys
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        s = socket.create_connection((host, %d if host == "127.0.0.1" else 53), timeout=2)
        print("CONNECTED", host, s.recv(100))
    except OSError as e:
        print("blocked", host, type(e).__name__)
`, port),
		"tool/scripts/echo.py":  "import json, sys\nargs = json.load(sys.stdin)\nprint('hello', args['who'])\nopen('out.txt', 'w').write('made by ' + args['who'])\n",
		"tool/scripts/fail.sh":  "echo oops >&2\nexit 3\n",
		"tool/scripts/sleep.sh": "sleep 30\n",
		"tool/scripts/env.sh":   "env; cat /root/.profile 2>&1; ls /home 2>&1\n",
		"tool/references/x.sh":  "echo not a script\n",
	}
	os.Setenv("SKILLPORT_TEST_SECRET", "SECRET-VALUE-1234")
	defer os.Unsetenv("SKILLPORT_TEST_SECRET")
	runner := newRunner(t)
	f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: runner, Logger: discard})
	c := connectRaw(t, f.MCP, "")

	var init map[string]map[string]any
	json.Unmarshal(c.init, &init)
	if sk, _ := init["capabilities"]["skills"].(map[string]any); sk["scripts"] != true {
		t.Errorf("capabilities.skills = %v, want scripts: true", init["capabilities"]["skills"])
	}

	text := func(r wire.ExecuteResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	t.Run("output and files", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "echo", "arguments": map[string]any{"who": "tester"}})
		if r.IsError || !strings.Contains(text(r), "hello tester") {
			t.Fatalf("result %+v", r)
		}
		var out *wire.OutputResource
		for _, it := range r.Content {
			if it.Type == "resource" {
				out = it.Resource
			}
		}
		if out == nil || out.Text == nil || *out.Text != "made by tester" || !strings.HasPrefix(out.URI, "skill-run://") || !strings.HasSuffix(out.URI, "/out.txt") {
			t.Errorf("output resource %+v", out)
		}
	})
	t.Run("no network", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "scripts/net.py"})
		out := text(r)
		if strings.Contains(out, "CONNECTED") || strings.Contains(out, "HOST-LISTENER") || !strings.Contains(out, "blocked 127.0.0.1") || !strings.Contains(out, "blocked 1.1.1.1") {
			t.Errorf("network probe: %s", out)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "env.sh"})
		if out := text(r); strings.Contains(out, "SECRET-VALUE") || strings.Contains(out, "SKILLPORT_TEST_SECRET") {
			t.Errorf("the script saw the server's environment: %s", out)
		}
	})
	t.Run("non-zero exit", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "fail.sh"})
		if !r.IsError || !strings.Contains(text(r), "oops") || !strings.Contains(text(r), "exit status 3") {
			t.Errorf("result %+v", r)
		}
	})
	t.Run("limit", func(t *testing.T) {
		slow, err := sandbox.New(&sandbox.Options{Logger: discard, Limits: sandbox.Limits{WallClock: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: slow})
		c := connectRaw(t, f.MCP, "")
		e := wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": "sleep.sh"}, wire.CodeScriptFailed, "reason")
		if !strings.Contains(string(e.Data), "timeout") {
			t.Errorf("data %s", e.Data)
		}
	})
	t.Run("busy", func(t *testing.T) {
		one, err := sandbox.New(&sandbox.Options{Logger: discard, MaxRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: one})
		c := connectRaw(t, f.MCP, "")
		// Another run holds the only slot until cancelled.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_, err := one.Run(ctx, sandbox.Spec{SkillDir: filepath.Join(f.Dir, "tool"), Script: "scripts/sleep.sh"})
				if !errors.Is(err, sandbox.ErrBusy) { // the probe below held the slot
					return
				}
			}
		}()
		defer func() { cancel(); <-done }()
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			_, err := one.Run(context.Background(), sandbox.Spec{SkillDir: filepath.Join(f.Dir, "tool"), Script: "scripts/fail.sh"})
			if errors.Is(err, sandbox.ErrBusy) {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the first run never took the slot")
			}
		}
		e := wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": "echo"}, wire.CodeScriptFailed, "reason")
		if !strings.Contains(string(e.Data), "busy") {
			t.Errorf("data %s", e.Data)
		}
	})
	for _, bad := range []string{"x.sh", "references/x.sh", "../tool/scripts/fail.sh", "scripts/../references/x.sh", "/bin/sh", "nope"} {
		t.Run("refused "+bad, func(t *testing.T) {
			wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": bad}, -32602, "script")
		})
	}
	wantError(t, c, "skills/execute", map[string]any{"name": "nope", "script": "echo"}, -32602, "name")
	// Nothing was ever written into the served tree.
	if _, err := os.Stat(filepath.Join(f.Dir, "tool", "scripts", "out.txt")); err == nil {
		t.Errorf("a script wrote into the skill directory")
	}
}

// newRunner returns a sandbox runner, failing the test when none can be
// built here: the execute tests must not pass by not running.
func newRunner(t testing.TB) *sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(&sandbox.Options{Logger: discard, Limits: sandbox.Limits{WallClock: 20 * time.Second}})
	if err != nil {
		t.Fatalf("skills/execute needs a working bubblewrap sandbox (install bubblewrap, allow user namespaces): %v", err)
	}
	return r
}
