package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/published"
)

// EnvWebhookSecret holds the shared secret of git push webhooks.
const EnvWebhookSecret = "SKILLPORT_WEBHOOK_SECRET"

func init() {
	f := serveCmd.Flags()
	f.Duration("poll", gitsource.DefaultPoll, "re-resolve git branches and oci:// tags every `D` (git tags, commits and oci:// digests never move)")
	f.String("cache-dir", "", "keep git mirrors in `DIR`, and oci:// blobs in DIR/oci (default: skillport/git and skillport/oci under the user cache directory)")
	f.Int64("git-max-fetch", gitsource.DefaultMaxFetch, "a fetch of a git source fails once it has written `N` bytes to the cache")
	f.String("webhook-secret-file", "", "with --http, accept push webhooks at "+gitsource.WebhookPath+" signed with the secret in `FILE` (or $"+EnvWebhookSecret+")")
}

// servedSource is one SOURCE argument of serve, opened.
type servedSource struct {
	name string // the argument, without credentials
	src  *published.CatalogSource
	git  *gitsource.Source // nil for a directory
	oci  *ocisource.Source // nil unless oci://
}

// sourceSet is what serve publishes: one or several sources.
type sourceSet struct {
	parts  []servedSource
	source published.Source
}

type sourceOptions struct {
	prefix   string // --prefix, for a single source
	dotfiles bool
	// strict and allowHardlinks are catalog.Options.Strict and
	// AllowHardlinks, for every source.
	strict, allowHardlinks bool
	cacheDir               string
	maxFetch               int64 // gitsource.Options.MaxFetch
	plainHTTP              bool  // --plain-http, for oci:// sources
	log                    *slog.Logger
}

// splitPrefix separates PREFIX=SOURCE. The part before "=" is a prefix
// only when it is a valid skill path prefix ("acme", "acme/tools"); write
// ./a=b for a directory whose name holds "=".
func splitPrefix(arg string) (prefix, src string) {
	p, rest, ok := strings.Cut(arg, "=")
	if !ok || p == "" || gitsource.IsSpec(p) {
		return "", arg
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.TrimFunc(seg, func(r rune) bool {
			return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.'
		}) != "" {
			return "", arg
		}
	}
	return p, rest
}

// badPrefix explains an argument that is not a path but looks like
// PREFIX=SOURCE with an invalid prefix ("Team=git+…"), rather than
// letting it fail as a file that does not exist.
func badPrefix(arg string) error {
	p, rest, ok := strings.Cut(arg, "=")
	if !ok || p == "" || gitsource.IsSpec(p) {
		return nil
	}
	if _, err := os.Stat(arg); err == nil {
		return nil
	}
	if _, err := os.Stat(rest); err != nil && !gitsource.IsSpec(rest) {
		return nil
	}
	return usageErrorf("serve: %s: the prefix %q must be lowercase letters, digits, '-' and '.', segments joined by '/' (e.g. %s=…); write ./%s for a folder whose name holds '='",
		esc(arg), esc(p), esc(strings.ToLower(p)), esc(arg))
}

// openSources opens each SOURCE ([PREFIX=]DIR, [PREFIX=]git+URL[@REF][#SUBDIR] or
// [PREFIX=]oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]).
func openSources(ctx context.Context, args []string, o sourceOptions) (*sourceSet, error) {
	if o.prefix != "" && len(args) > 1 {
		return nil, usageErrorf("serve: --prefix applies to one source; give each source its own with PREFIX=SOURCE")
	}
	set := &sourceSet{}
	for _, arg := range args {
		prefix, src := splitPrefix(arg)
		if prefix == "" {
			if err := badPrefix(arg); err != nil {
				return nil, err
			}
			prefix = o.prefix
		}
		copts := &catalog.Options{Prefix: prefix, IncludeDotFiles: o.dotfiles, Strict: o.strict, AllowHardlinks: o.allowHardlinks, Logger: o.log}
		if ocisource.IsSpec(src) {
			p, err := openOCI(ctx, src, copts, o)
			if err != nil {
				return nil, err
			}
			set.parts = append(set.parts, p)
			continue
		}
		if gitsource.IsSpec(src) {
			spec, err := gitsource.ParseSpec(src)
			if err != nil {
				return nil, usageErrorf("serve: %v", err)
			}
			g, err := gitsource.Open(ctx, spec, &gitsource.Options{CacheDir: o.cacheDir, MaxFetch: o.maxFetch, Catalog: copts, Logger: o.log})
			if err != nil {
				return nil, &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
			}
			st := g.Status()
			o.log.Info("git source", "source", st.Source, "ref", st.Ref, "commit", st.Commit, "pinned", st.Pinned)
			set.parts = append(set.parts, servedSource{name: spec.String(), src: published.NewCatalogSource(g.Catalog()), git: g})
			continue
		}
		// A directory's first catalog is served before it is packed, and
		// packed right after (follow): serve answers sooner.
		dopts := *copts
		dopts.PackLater = true
		copts = &dopts
		// A skill's SKILL.md stands for its folder, as validate takes it.
		if fi, err := os.Stat(src); err == nil && !fi.IsDir() && filepath.Base(src) == "SKILL.md" {
			src = filepath.Dir(src)
		}
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return nil, usageErrorf("serve: %s: %v", esc(src), err)
		}
		cat, err := catalog.OpenDir(src, copts)
		if err != nil {
			return nil, &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		set.parts = append(set.parts, servedSource{name: src, src: published.NewCatalogSource(cat)})
	}
	if len(set.parts) == 1 {
		set.source = set.parts[0].src
		return set, nil
	}
	parts := make([]published.MergePart, len(set.parts))
	for i, p := range set.parts {
		parts[i] = published.MergePart{Name: p.name, Source: p.src}
	}
	m, err := published.Merge(parts, o.log)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
	}
	set.source = m
	return set, nil
}

// follow keeps every source current until ctx ends: directories are
// watched (when watch is set), git branches polled every poll.
func (s *sourceSet) follow(ctx context.Context, watch bool, poll time.Duration, log *slog.Logger) {
	if watch {
		dirs := 0
		for _, p := range s.parts {
			if p.git == nil && p.oci == nil {
				dirs++
			}
		}
		watchGC(dirs)
	}
	for _, p := range s.parts {
		switch {
		case p.git != nil:
			go p.git.Watch(ctx, poll, p.src.Swap)
		case p.oci != nil:
			go p.oci.Watch(ctx, poll, p.src.Swap)
		case watch:
			go func() {
				p.src.Pack() // before the watch, whose reloads then share the packed files
				started := false
				err := p.src.Watch(ctx, &catalog.WatchOptions{Started: func() { started = true; watchStarted() }})
				if !started {
					watchDone()
				}
				if err != nil {
					log.Warn("live reload is off", "source", p.name, "err", err)
				}
			}()
		default:
			go func() {
				p.src.Pack()
				debug.FreeOSMemory() // the unpacked catalog's pages
			}()
		}
	}
}

// webhook returns the push webhook route, or nil when there is no git
// branch to update or no secret configured.
func (s *sourceSet) webhook(secretFile string, log *slog.Logger) (*httpRoute, error) {
	var gits []*gitsource.Source
	for _, p := range s.parts {
		if p.git != nil && !p.git.Pinned() {
			gits = append(gits, p.git)
		}
	}
	secret := []byte(os.Getenv(EnvWebhookSecret))
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return nil, usageErrorf("serve: --webhook-secret-file: %v", err)
		}
		secret = []byte(strings.TrimSpace(string(b)))
		if len(secret) == 0 {
			return nil, usageErrorf("serve: --webhook-secret-file %s is empty", secretFile)
		}
	}
	if len(secret) == 0 || len(gits) == 0 {
		return nil, nil
	}
	h, err := gitsource.Webhook(secret, gits, log)
	if err != nil {
		return nil, err
	}
	return &httpRoute{path: gitsource.WebhookPath, h: h}, nil
}

// describe names what is served, for the summary line.
func (s *sourceSet) describe() string {
	names := make([]string, len(s.parts))
	for i, p := range s.parts {
		names[i] = p.name
		if p.git != nil {
			names[i] += " (" + p.git.Status().Commit[:12] + ")"
		}
		if p.oci != nil {
			names[i] += " (" + p.oci.Digest()[:len("sha256:")+12] + ")"
		}
	}
	return strings.Join(names, ", ")
}

// httpRoute is one more handler served beside /mcp.
type httpRoute struct {
	path string
	h    http.Handler
}

// summary prints the one-line account of what is served to stderr, in the
// format of summary().
func (s *sourceSet) summary(where string) {
	var st catalog.Stats
	for _, p := range s.parts {
		c := p.src.Catalog().Stats()
		st.Skills += c.Skills
		st.Files += c.Files
		st.Bytes += c.Bytes
		st.Invalid += c.Invalid
	}
	// Tests and scripts parse this line: its shape stays as it is.
	msg := fmt.Sprintf("serving %s (%s, %s) from %s at %s", count(st.Skills, "skill", "skills"), count(st.Files, "file", "files"), humanSize(st.Bytes), esc(s.describe()), where)
	if st.Invalid > 0 {
		msg += fmt.Sprintf("; %d skills skipped (see above)", st.Invalid)
	}
	fmt.Fprintln(os.Stderr, msg)
	if st.Skills == 0 && st.Invalid == 0 {
		fmt.Fprintf(os.Stderr, "skillport: warning: %s holds no skill (a skill is a folder holding SKILL.md); serving an empty catalog\n", esc(s.describe()))
	}
}
