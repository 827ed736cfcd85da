package main

import (
	"net"
	"strings"
	"testing"
)

// TestLsOfAStoppedServerSaysOneLine: the cause in words, once, and no
// "no skills found" burying it.
func TestLsOfAStoppedServerSaysOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	_, errOut, code := runCLI(t, "ls", url)
	want := "skillport: server: " + url + ": nothing is listening there (connection refused); start the server, or check the host and port\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
	}
	if strings.Contains(errOut, "no skills found") {
		t.Error("the failure is buried under no skills found")
	}
}
