package gitsource

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Environment variables read by [CredentialsFromEnv]. Secrets come from
// the environment or a file, never from a command-line flag, which any
// user can read with ps.
const (
	EnvToken       = "SKILLPORT_GIT_TOKEN"       // token for every https:// source
	EnvUsername    = "SKILLPORT_GIT_USERNAME"    // user sent with the token (default "git")
	EnvCredentials = "SKILLPORT_GIT_CREDENTIALS" // a git-credentials file
	EnvSSHKey      = "SKILLPORT_GIT_SSH_KEY"     // private key file for ssh:// sources
	EnvSSHPass     = "SKILLPORT_GIT_SSH_PASSPHRASE"
	EnvKnownHosts  = "SKILLPORT_GIT_KNOWN_HOSTS" // known_hosts file (default ~/.ssh/known_hosts)
)

// MaxCredentialsFile bounds the credentials file read.
const MaxCredentialsFile = 1 << 20

// Credentials authenticate fetches. The zero value sends none (ssh://
// then uses the SSH agent, as git does).
type Credentials struct {
	// Token and Username are sent as HTTP basic auth to https:// sources
	// only (never over plain http).
	Token, Username string
	// File is a git-credentials file (one https://user:token@host[/path]
	// per line, as git credential-store writes it); the entry whose
	// scheme, host and path prefix match the source is used, before Token.
	File string
	// SSHKey is a private key file for ssh:// sources, SSHPassphrase its
	// passphrase. The server's key is checked against KnownHosts (default
	// ~/.ssh/known_hosts); an unknown host is refused.
	SSHKey, SSHPassphrase string
	KnownHosts            string
}

// CredentialsFromEnv reads the SKILLPORT_GIT_* variables.
func CredentialsFromEnv() Credentials {
	return Credentials{
		Token:         os.Getenv(EnvToken),
		Username:      os.Getenv(EnvUsername),
		File:          os.Getenv(EnvCredentials),
		SSHKey:        os.Getenv(EnvSSHKey),
		SSHPassphrase: os.Getenv(EnvSSHPass),
		KnownHosts:    os.Getenv(EnvKnownHosts),
	}
}

// auth returns the transport credentials for the source's URL, or nil.
func (s *Source) auth() (transport.AuthMethod, error) {
	a, err := s.creds.forURL(s.spec.URL)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", redactURL(s.spec.URL), err)
	}
	return a, nil
}

func (c *Credentials) forURL(raw string) (transport.AuthMethod, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		if c.File != "" {
			user, pass, ok, err := lookupCredentials(c.File, u)
			if err != nil {
				return nil, err
			}
			if ok {
				return &githttp.BasicAuth{Username: user, Password: pass}, nil
			}
		}
		if c.Token != "" && u.Scheme == "https" {
			user := c.Username
			if user == "" {
				user = "git"
			}
			return &githttp.BasicAuth{Username: user, Password: c.Token}, nil
		}
	case "ssh":
		user := u.User.Username()
		if user == "" {
			user = "git"
		}
		if c.SSHKey == "" && c.KnownHosts == "" {
			return nil, nil // go-git's default: the agent, with ~/.ssh/known_hosts
		}
		var am *gitssh.PublicKeys
		if c.SSHKey != "" {
			am, err = gitssh.NewPublicKeysFromFile(user, c.SSHKey, c.SSHPassphrase)
			if err != nil {
				return nil, fmt.Errorf("ssh key %s: %v", c.SSHKey, err)
			}
		}
		kh := c.KnownHosts
		if kh == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("no known_hosts file: set %s", EnvKnownHosts)
			}
			kh = filepath.Join(home, ".ssh", "known_hosts")
		}
		cb, err := gitssh.NewKnownHostsCallback(kh)
		if err != nil {
			return nil, fmt.Errorf("known_hosts %s: %v (the server's key must be known; add it with ssh-keyscan after checking it)", kh, err)
		}
		if am == nil {
			agent, err := gitssh.NewSSHAgentAuth(user)
			if err != nil {
				return nil, fmt.Errorf("no ssh key: set %s or start an ssh agent: %v", EnvSSHKey, err)
			}
			agent.HostKeyCallback = cb
			return agent, nil
		}
		am.HostKeyCallback = cb
		return am, nil
	}
	return nil, nil
}

// lookupCredentials finds the git-credentials line for u.
func lookupCredentials(file string, u *url.URL) (user, pass string, ok bool, err error) {
	fh, err := os.Open(file)
	if err != nil {
		return "", "", false, fmt.Errorf("credentials file: %v", err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || fi.Size() > MaxCredentialsFile {
		return "", "", false, fmt.Errorf("credentials file %s: not a regular file of at most %d bytes", file, MaxCredentialsFile)
	}
	sc := bufio.NewScanner(io.LimitReader(fh, MaxCredentialsFile))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	line := 0
	best := -1
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		e, err := url.Parse(t)
		if err != nil || e.User == nil {
			// Never echo the line: it holds a secret.
			return "", "", false, fmt.Errorf("credentials file %s line %d: not a URL of the form https://user:token@host", file, line)
		}
		p, set := e.User.Password()
		if !set || e.Scheme != u.Scheme || !strings.EqualFold(e.Host, u.Host) {
			continue
		}
		prefix := strings.TrimSuffix(e.Path, "/")
		if prefix != "" && u.Path != prefix && !strings.HasPrefix(u.Path, prefix+"/") {
			continue
		}
		if len(prefix) > best {
			best, user, pass, ok = len(prefix), e.User.Username(), p, true
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", false, fmt.Errorf("credentials file %s: %v", file, err)
	}
	return user, pass, ok, nil
}
