package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRegistryHelpHidesDSN: with $SKILLPORT_REGISTRY set (password
// included), --help of publish and of every registry command names the
// variable, never its value.
func TestRegistryHelpHidesDSN(t *testing.T) {
	const secret = "hunter2-not-for-help"
	for _, args := range [][]string{
		{"publish", "--help"},
		{"registry", "--help"},
		{"registry", "migrate", "--help"},
		{"registry", "versions", "--help"},
		{"registry", "diff", "--help"},
		{"registry", "rollback", "--help"},
		{"registry", "yank", "--help"},
		{"registry", "log", "--help"},
		{"registry", "rescan", "--help"},
		{"registry", "scan-policy", "--help"},
	} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "SKILLPORT_AS_CLI=1", "SKILLPORT_REGISTRY=postgres://admin:"+secret+"@127.0.0.1:1/reg")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("%v prints the password of $SKILLPORT_REGISTRY:\n%s", args, out)
		}
		if !strings.Contains(string(out), "$SKILLPORT_REGISTRY") {
			t.Errorf("%v does not say --registry defaults to $SKILLPORT_REGISTRY:\n%s", args, out)
		}
	}
	// Without --registry the variable still names the registry (and the
	// error about it shows no password).
	cmd := exec.Command(os.Args[0], "registry", "migrate")
	cmd.Env = append(os.Environ(), "SKILLPORT_AS_CLI=1", "SKILLPORT_REGISTRY=postgres://admin:"+secret+"@127.0.0.1:1/reg")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "postgres://admin@127.0.0.1:1/reg") || strings.Contains(string(out), secret) {
		t.Errorf("registry migrate with $SKILLPORT_REGISTRY: %s", out)
	}
}

// TestRegistryHungDatabase: a database host that accepts connections and
// then never answers fails a registry command within --timeout, saying so,
// instead of holding it.
func TestRegistryHungDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	start := time.Now()
	_, stderr, code := runCLI(t, "registry", "versions", "acme/x", "--timeout", "500ms",
		"--registry", "postgres://u@"+ln.Addr().String()+"/reg?sslmode=disable")
	if took := time.Since(start); code != 1 || took > 5*time.Second || !strings.Contains(stderr, "did not answer within 500ms") {
		t.Errorf("registry versions against a hung database: exit %d after %s: %s", code, took, stderr)
	}
}
