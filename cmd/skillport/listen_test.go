package main

import (
	"net"
	"os"
	"testing"
)

// TestListenURL: the start line shows a URL one can open: never
// http://[::]:8080/mcp, and a loopback bind from ":8080" says how to
// listen on every interface.
func TestListenURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "127.0.0.1"
	}
	for _, tc := range []struct {
		ip   net.IP
		flag string
		want string
	}{
		{net.IPv6unspecified, "0.0.0.0:8080", "http://" + host + ":8080/mcp (listening on all interfaces)"},
		{net.IPv4zero, "0.0.0.0:8080", "http://" + host + ":8080/mcp (listening on all interfaces)"},
		{net.IPv4(127, 0, 0, 1), ":8080", "http://127.0.0.1:8080/mcp (this machine only; --http 0.0.0.0:8080 listens on all interfaces)"},
		{net.IPv4(127, 0, 0, 1), "8080", "http://127.0.0.1:8080/mcp (this machine only; --http 0.0.0.0:8080 listens on all interfaces)"},
		{net.IPv4(127, 0, 0, 1), "127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{net.IPv6loopback, "[::1]:8080", "http://[::1]:8080/mcp"},
	} {
		if got := listenURL(&net.TCPAddr{IP: tc.ip, Port: 8080}, tc.flag); got != tc.want {
			t.Errorf("%v from --http %s: %q, want %q", tc.ip, tc.flag, got, tc.want)
		}
	}
}
