//go:build unix

// Package pgtest runs a real PostgreSQL server for tests: the Debian
// postgresql package's binaries, a fresh cluster in a temporary directory,
// listening on a free loopback port. PostgreSQL refuses to run as root, so
// when the test runs as root the server runs as the unprivileged user
// "nobody".
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one running (or stopped) PostgreSQL cluster.
type Server struct {
	// DSN connects to the server's "postgres" database.
	DSN string

	bin  string
	dir  string
	port int
	cred *syscall.Credential

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
}

// binDir finds the newest /usr/lib/postgresql/*/bin.
func binDir() (string, error) {
	if d := os.Getenv("SKILLPORT_PG_BIN"); d != "" {
		return d, nil
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(ms) == 0 {
		return "", errors.New("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin: install the Debian package postgresql (apt-get install postgresql), or set SKILLPORT_PG_BIN")
	}
	sort.Slice(ms, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[i]))))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[j]))))
		return a < b
	})
	return filepath.Dir(ms[len(ms)-1]), nil
}

// Start creates a cluster under dir (which must exist and be empty) and
// starts it.
func Start(dir string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root and there is no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		// The parents must be traversable by nobody.
		for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
					return nil, err
				}
			}
		}
	}
	if s.log, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		return nil, err
	}
	if s.cred != nil {
		os.Chown(s.log.Name(), int(s.cred.Uid), int(s.cred.Gid))
	}
	initdb := s.command("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb failed: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	return s, s.Restart()
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	return cmd
}

// Restart starts the server again after [Server.Kill] or [Server.Stop],
// on the same port, and waits until it accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: already running")
	}
	cmd := s.command("postgres", "-D", s.data(), "-p", strconv.Itoa(s.port), "-h", "127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			s.exited = exited
			return nil
		}
		select {
		case werr := <-exited:
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited while starting (%v); its log:\n%s", werr, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres did not accept connections within 60s: %v; its log:\n%s", err, s.Log())
		}
	}
}

// Kill ends the server at once (SIGKILL to the postmaster and its
// backends), the way a crashed or unreachable database looks to clients.
func (s *Server) Kill() error { return s.stop(syscall.SIGKILL) }

// Pause stops the server and its backends with SIGSTOP, the way a hung
// database host looks to clients: connections stay open and nothing
// answers. Resume continues them. Linux only (it finds the backends in
// /proc).
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a server stopped by Pause.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("pgtest: the server is not running")
	}
	pid := s.cmd.Process.Pid
	// Backends and auxiliary processes each start a session of their own:
	// signal the postmaster's children one by one (Linux /proc), then it.
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("pgtest: listing the server's processes: %w", err)
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ")".
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			syscall.Kill(child, sig)
		}
	}
	return syscall.Kill(pid, sig)
}

// Stop shuts the server down cleanly (fast shutdown: clients are
// disconnected).
func (s *Server) Stop() error { return s.stop(syscall.SIGINT) }

func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	// The backends are in the postmaster's process group.
	if err := syscall.Kill(-s.cmd.Process.Pid, sig); err != nil {
		return err
	}
	<-s.exited
	s.cmd = nil
	if sig == syscall.SIGKILL {
		// Backends may outlive a killed postmaster for a moment; wait until
		// the port is free so that a restart can bind it.
		for i := 0; i < 200; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
			if err == nil {
				ln.Close()
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		os.Remove(filepath.Join(s.data(), "postmaster.pid"))
	}
	return nil
}

// Log returns what the server wrote to its log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return strings.TrimSpace(string(b))
}

// NewDatabase creates an empty database and returns its DSN, so that tests
// sharing one server do not see each other's registries.
func (s *Server) NewDatabase(name string) (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: creating database %s: %w", name, err)
	}
	return strings.Replace(s.DSN, "/postgres?", "/"+name+"?", 1), nil
}
