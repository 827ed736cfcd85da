package pgtest

import (
	"fmt"
	"os"
	"testing"
)

// Main is a test package's TestMain with one server shared by its tests:
// it starts a server in a temporary directory, sets *srv, runs m, stops
// the server and removes the directory. A server that cannot start fails
// the run, saying why: the tests never skip for want of PostgreSQL.
func Main(m *testing.M, srv **Server) int {
	dir, err := os.MkdirTemp("", "skillport-pg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := Start(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: these tests need PostgreSQL and it could not start: %v\n", err)
		return 1
	}
	defer s.Stop()
	*srv = s
	return m.Run()
}
