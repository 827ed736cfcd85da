package gitsource_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// endlessAdvertisement writes a ref advertisement that never ends to w
// (stopping at 4 GiB or when the client hangs up).
func endlessAdvertisement(w io.Writer) {
	const tip = "1111111111111111111111111111111111111111"
	if _, err := io.WriteString(w, pkt(tip+" HEAD\x00symref=HEAD:refs/heads/main ofs-delta agent=hostile\n")+
		pkt(tip+" refs/heads/main\n")); err != nil {
		return
	}
	for i := 0; i < 4<<30/100; i++ {
		if _, err := io.WriteString(w, pkt(fmt.Sprintf("%s refs/heads/%s%090d\n", tip, tip, i))); err != nil {
			return
		}
	}
}

// serveHostile accepts at most 8 connections on ln, each handled by
// handle, until the test ends.
func serveHostile(t *testing.T, ln net.Listener, handle func(net.Conn)) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for range 8 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
}

// hostileGitDaemon is a git:// server on loopback that reads the
// client's request line and answers with an endless ref advertisement.
func hostileGitDaemon(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveHostile(t, ln, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		var head [4]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		var n int
		if _, err := fmt.Sscanf(string(head[:]), "%04x", &n); err != nil || n < 4 {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(n-4)); err != nil {
			return
		}
		endlessAdvertisement(c)
	})
	return "git+git://" + ln.Addr().String() + "/repo.git@main"
}

// hostileSSHServer is an ssh server on loopback (golang.org/x/crypto/ssh)
// that accepts any client key and answers any command with an endless
// ref advertisement. It returns the spec and the child's environment: a
// client key and a known_hosts holding the server's key.
func hostileSSHServer(t *testing.T) (string, []string) {
	dir := t.TempDir()
	hostKey := newSSHKey(t, dir, "host")
	pem, err := os.ReadFile(hostKey.file)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	client := newSSHKey(t, dir, "client")
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveHostile(t, ln, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		_, chans, reqs, err := ssh.NewServerConn(c, cfg)
		if err != nil {
			return
		}
		go ssh.DiscardRequests(reqs)
		for nc := range chans {
			if nc.ChannelType() != "session" {
				nc.Reject(ssh.UnknownChannelType, "session only")
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				return
			}
			for r := range creqs {
				r.Reply(r.Type == "exec", nil)
				if r.Type == "exec" {
					go ssh.DiscardRequests(creqs)
					endlessAdvertisement(ch)
					ch.Close()
					return
				}
			}
		}
	})
	spec := "git+ssh://git@" + ln.Addr().String() + "/repo.git@main"
	return spec, []string{"SKILLPORT_HOSTILE_SSHKEY=" + client.file,
		"SKILLPORT_HOSTILE_KNOWNHOSTS=" + knownHosts(t, ln.Addr().String(), signer.PublicKey())}
}

// TestHostileAdvertisement runs an endless ref advertisement from a
// git:// and an ssh:// remote against Open, as the smart-HTTP one of
// TestHostileRemote: a one-line error naming the remote, within the
// memory bound, long before the fetch timeout.
func TestHostileAdvertisement(t *testing.T) {
	cases := []struct {
		name   string
		remote func(*testing.T) (string, []string)
	}{
		{"git://", func(t *testing.T) (string, []string) { return hostileGitDaemon(t), nil }},
		{"ssh://", hostileSSHServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, env := c.remote(t)
			res := runAttack(t, spec, 20*time.Second, 0, env...)
			t.Logf("peak RSS %d MiB, allocated %d MiB, %.2f s: %s", res.PeakRSS>>20, res.TotalAlloc>>20, res.Seconds, res.Err)
			host := strings.TrimPrefix(strings.TrimSuffix(spec, "/repo.git@main"), "git+"+c.name)
			host = host[strings.LastIndex(host, "@")+1:]
			if !strings.Contains(res.Err, host) || !strings.Contains(res.Err, "ref advertisement of more than") || strings.Contains(res.Err, "\n") {
				t.Errorf("error %q: want one line naming %s and the advertisement's bound", res.Err, host)
			}
			if res.PeakRSS > hostileBound {
				t.Errorf("allocated %d MiB, peak RSS %d MiB: over the %d MiB bound", res.TotalAlloc>>20, res.PeakRSS>>20, hostileBound>>20)
			}
			if res.Seconds > 10 {
				t.Errorf("the attack held the fetch %.1f s", res.Seconds)
			}
		})
	}
}
