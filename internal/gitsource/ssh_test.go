package gitsource_test

import (
	"crypto/ed25519"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/skillport/skillport/internal/gitsource"
)

// sshdPath is OpenSSH's server (Debian package "openssh-server").
const sshdPath = "/usr/sbin/sshd"

// sshKey is a generated ed25519 key pair written as an OpenSSH private key.
type sshKey struct {
	file string // the private key file
	pub  ssh.PublicKey
}

func newSSHKey(t *testing.T, dir, name string) sshKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sshKey{file: file, pub: sp}
}

// sshd is an OpenSSH server on loopback accepting one client key.
type sshd struct {
	addr    string // 127.0.0.1:port
	hostKey ssh.PublicKey
}

// startSSHD runs /usr/sbin/sshd -D on a free loopback port with a fresh
// host key, accepting client for the current user (root included).
func startSSHD(t *testing.T, client ssh.PublicKey) *sshd {
	t.Helper()
	needGit(t)
	if _, err := os.Stat(sshdPath); err != nil {
		t.Fatalf("the ssh tests run OpenSSH's server: %v (apt-get install openssh-server)", err)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host := newSSHKey(t, dir, "host_ed25519")
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(client), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(dir, "sshd_config")
	conf := strings.Join([]string{
		"ListenAddress 127.0.0.1",
		"Port " + strconv.Itoa(port),
		"HostKey " + host.file,
		"AuthorizedKeysFile " + auth,
		"PidFile none",
		"StrictModes no",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"LogLevel VERBOSE",
	}, "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfg)
	var errb logBuffer
	cmd.Stderr = &errb
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", errb.String())
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitListening(t, "sshd", addr, &errb)
	return &sshd{addr: addr, hostKey: host.pub}
}

// knownHosts writes a known_hosts file giving key for the server at addr.
func knownHosts(t *testing.T, addr string, key ssh.PublicKey) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	line := "[" + host + "]:" + port + " " + string(ssh.MarshalAuthorizedKey(key))
	file := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestSSHKnownHosts clones over ssh:// from a real OpenSSH server with a
// key: with the server's key in known_hosts the skills are served, with
// another key for the same host the fetch is refused before any
// authentication, naming the host key check.
func TestSSHKnownHosts(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"skills/x/SKILL.md": skillMD("x", "over ssh")})
	r.push("main")
	client := newSSHKey(t, t.TempDir(), "id_ed25519")
	srv := startSSHD(t, client.pub)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	spec := "git+ssh://" + me.Username + "@" + srv.addr + r.bare + "#skills"

	good := knownHosts(t, srv.addr, srv.hostKey)
	s := mustOpen(t, spec, &gitsource.Options{Credentials: &gitsource.Credentials{SSHKey: client.file, KnownHosts: good}})
	if got := body(t, s.Catalog(), "skill://x/SKILL.md"); !strings.Contains(got, "over ssh") {
		t.Errorf("served %q", got)
	}

	other := newSSHKey(t, t.TempDir(), "impostor")
	wrong := knownHosts(t, srv.addr, other.pub)
	_, err = open(t, spec, &gitsource.Options{Credentials: &gitsource.Credentials{SSHKey: client.file, KnownHosts: wrong}})
	if err == nil {
		t.Fatal("a server whose key is not the one in known_hosts was trusted")
	}
	// A known_hosts without the server: refused, saying to add it.
	unknown := knownHosts(t, "127.0.0.1:1", srv.hostKey)
	_, err2 := open(t, spec, &gitsource.Options{Credentials: &gitsource.Credentials{SSHKey: client.file, KnownHosts: unknown}})
	if err2 == nil || !strings.Contains(err2.Error(), "not in known_hosts") {
		t.Errorf("known_hosts without the server: %v, want a refusal saying to add it", err2)
	}
	if !strings.Contains(err.Error(), "key mismatch") || !strings.Contains(err.Error(), "host key is not the one known_hosts gives") {
		t.Errorf("wrong known_hosts: %v, want an error naming the host key check", err)
	}
}
