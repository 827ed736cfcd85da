//go:build !unix

package pgtest

import "errors"

// Server is one running PostgreSQL cluster; the tests run it on Unix only.
type Server struct {
	// DSN connects to the server's "postgres" database.
	DSN string
}

var errUnix = errors.New("pgtest: the PostgreSQL tests start the Debian postgresql package and run on Unix only")

// Start fails: see [errUnix].
func Start(string) (*Server, error) { return nil, errUnix }

// Restart fails: see [errUnix].
func (s *Server) Restart() error { return errUnix }

// Kill fails: see [errUnix].
func (s *Server) Kill() error { return errUnix }

// Stop fails: see [errUnix].
func (s *Server) Stop() error { return errUnix }

// Log returns "".
func (s *Server) Log() string { return "" }

// NewDatabase fails: see [errUnix].
func (s *Server) NewDatabase(string) (string, error) { return "", errUnix }

// Pause fails: see [errUnix].
func (s *Server) Pause() error { return errUnix }

// Resume fails: see [errUnix].
func (s *Server) Resume() error { return errUnix }
