package skills_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skills"
)

// TestServeStdio runs skills.Serve with go-sdk's stdio transport in a
// child process (this test binary) and checks that skillport's own stdio
// transport serves it: a stray line is answered with an error and the
// session goes on, and a read is answered.
func TestServeStdio(t *testing.T) {
	if dir := os.Getenv("SKILLS_TEST_SERVE_STDIO"); dir != "" {
		if err := skills.Serve(context.Background(), dir, &mcp.StdioTransport{}, nil); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestServeStdio$")
	cmd.Env = append(os.Environ(), "SKILLS_TEST_SERVE_STDIO=testdata/skills")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	r := bufio.NewReader(out)
	call := func(line string) string {
		t.Helper()
		if _, err := in.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after %s: %v", line, err)
			}
			if !strings.HasPrefix(l, `{"jsonrpc":"2.0","method"`) {
				return l
			}
		}
	}
	if l := call("not json"); !strings.Contains(l, `"code":-32700`) {
		t.Fatalf("a stray line: want a -32700 answer, got %s", l)
	}
	if l := call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); !strings.Contains(l, `"result"`) {
		t.Fatalf("initialize: %s", l)
	}
	if l := call(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://pdf/SKILL.md"}}`); !strings.Contains(l, `"contents"`) {
		t.Fatalf("resources/read: %s", l)
	}
}
