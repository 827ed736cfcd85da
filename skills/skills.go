// Package skills is the shortest way to serve Agent Skills over MCP: one
// call serves a folder, one call adds a folder or any fs.FS to an
// [mcp.Server] an application already has.
//
// It is built from the public layers below it, which stay available for
// anything it does not cover: [catalog.OpenDir] or [catalog.Open] turn
// a tree into a digested snapshot, [skillserver.NewCatalogSource] hands it to
// the extension server, [skillserver.Attach] or [skillserver.New] install the
// Skills Extension (io.modelcontextprotocol/skills) methods on an
// [mcp.Server], and [catalog.Watch] keeps it current with the folder.
//
// The package is named skills, not server, so that it never shadows the
// server := mcp.NewServer(...) variable every go-sdk program has.
package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/skillserver"
)

// Options configure [AddDirectory], [AddFS] and [Serve]. The zero value
// serves every valid skill of the tree with the extension's defaults and
// does not follow later changes.
type Options struct {
	// Catalog says how the tree becomes skills: a URI prefix, the
	// per-skill limits, a filter, whether dot files are published.
	Catalog catalog.Options
	// Server says how the skills are served: page size, cache lifetime,
	// compatibility profiles, instructions.
	Server skillserver.Options
	// Watch keeps the served skills current with the folder: after files
	// change, the catalog is rebuilt and clients are notified. Only a
	// folder can be watched; AddFS with Watch set fails with
	// [catalog.ErrNotWatchable].
	Watch bool
	// WatchOptions tune how changes are batched when Watch is set.
	WatchOptions catalog.WatchOptions
	// Implementation names the server [Serve] creates; nil means
	// {"name": "skillport"}. AddDirectory and AddFS leave the name of the
	// caller's server alone.
	Implementation *mcp.Implementation
}

// Served is what [AddDirectory] and [AddFS] installed: the skills half of
// an MCP server. Keep it to look at what is served and to release the
// folder once the MCP server has stopped.
type Served struct {
	srv *skillserver.Server
	src *published.CatalogSource
	log *slog.Logger

	stop     context.CancelFunc
	done     chan struct{}
	watchErr error

	once     sync.Once
	closeErr error
}

// AddDirectory serves the skills of the folder dir on s, alongside
// whatever else s serves. Every read stays inside dir, even through a
// symbolic link created later. A folder that is itself a skill (it holds a
// SKILL.md) is served under its own name. Call it before s is connected.
//
// Skills that are invalid or over the limits are left out and logged;
// their reasons are in Served.Catalog().Diagnostics(). The error is non-nil
// only when dir cannot be read at all or the options are invalid.
func AddDirectory(s *mcp.Server, dir string, opts *Options) (*Served, error) {
	o := options(opts)
	cat, err := catalog.OpenDir(dir, &o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("skills: serving %s: %w", dir, err)
	}
	return add(s, cat, o)
}

// AddFS serves the skills of fsys (an embed.FS, an fstest.MapFS, a zip
// archive) on s, alongside whatever else s serves. Call it before s is
// connected. Skills that are invalid are left out and logged.
func AddFS(s *mcp.Server, fsys fs.FS, opts *Options) (*Served, error) {
	o := options(opts)
	if o.Watch {
		return nil, fmt.Errorf("skills: Options.Watch is set but an fs.FS cannot be watched; use AddDirectory for a folder: %w", catalog.ErrNotWatchable)
	}
	cat, err := catalog.Open(fsys, &o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	return add(s, cat, o)
}

// Serve serves the skills of the folder dir, and nothing else, over t
// until ctx is done or the client disconnects, then releases the folder.
// For a local agent that is one line:
//
//	err := skills.Serve(ctx, "./skills", &mcp.StdioTransport{}, nil)
//
// Unlike [AddDirectory], the server it creates accepts resource
// subscriptions, so clients also learn when a file they read changes.
//
// An [*mcp.StdioTransport] is served by skillport's own stdio transport,
// as `skillport serve` serves it: a stray line is answered with a JSON-RPC
// error instead of ending the session, and reads take the server's thin
// read path (see skillserver.Options.NoFastPath).
func Serve(ctx context.Context, dir string, t mcp.Transport, opts *Options) error {
	o := options(opts)
	cat, err := catalog.OpenDir(dir, &o.Catalog)
	if err != nil {
		return fmt.Errorf("skills: serving %s: %w", dir, err)
	}
	src := published.NewCatalogSource(cat)
	s, srv, err := skillserver.New(o.Implementation, src, &o.Server)
	if err != nil {
		cat.Close()
		return fmt.Errorf("skills: %w", err)
	}
	sv := start(srv, src, o)
	if _, ok := t.(*mcp.StdioTransport); ok {
		t = srv.Transport(&stdio.Transport{In: os.Stdin, Out: os.Stdout})
	}
	runErr := s.Run(ctx, t)
	closeErr := sv.Close()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return closeErr
}

func options(opts *Options) *Options {
	o := &Options{}
	if opts != nil {
		*o = *opts
	}
	if o.Catalog.Logger == nil {
		o.Catalog.Logger = o.Server.Logger
	}
	return o
}

func add(s *mcp.Server, cat *catalog.Catalog, o *Options) (*Served, error) {
	src := published.NewCatalogSource(cat)
	srv, err := skillserver.Attach(s, src, &o.Server)
	if err != nil {
		cat.Close()
		return nil, fmt.Errorf("skills: %w", err)
	}
	return start(srv, src, o), nil
}

// start begins watching when asked to.
func start(srv *skillserver.Server, src *published.CatalogSource, o *Options) *Served {
	sv := &Served{srv: srv, src: src, log: o.Server.Logger}
	if sv.log == nil {
		sv.log = slog.Default()
	}
	if !o.Watch {
		return sv
	}
	ctx, stop := context.WithCancel(context.Background())
	sv.stop, sv.done = stop, make(chan struct{})
	wo := o.WatchOptions
	if wo.Logger == nil {
		wo.Logger = sv.log
	}
	go func() {
		defer close(sv.done)
		if err := src.Watch(ctx, &wo); err != nil {
			sv.log.Error("skills: the folder is not watched; the skills served will not follow its changes", "dir", src.Catalog().SourceDir(), "err", err)
			sv.watchErr = err
		}
	}()
	return sv
}

// Catalog returns the catalog being served now; with Options.Watch it
// changes as the folder does.
func (sv *Served) Catalog() *catalog.Catalog { return sv.src.Catalog() }

// Swap serves c instead of the current catalog, a catalog of your own
// built with [catalog.Open] or [catalog.OpenDir]; clients are told of the
// change when c's content differs. The previous catalog is not closed.
func (sv *Served) Swap(c *catalog.Catalog) { sv.src.Swap(c) }

// Server returns the extension server installed on the MCP server.
func (sv *Served) Server() *skillserver.Server { return sv.srv }

// Close stops watching the folder and releases it. Call it once the MCP
// server has stopped: reads of skill files fail afterwards. It returns
// the error that stopped watching early, if any, and is safe to call more
// than once.
func (sv *Served) Close() error {
	sv.once.Do(func() {
		if sv.stop != nil {
			sv.stop()
			<-sv.done
		}
		sv.srv.Close()
		sv.closeErr = errors.Join(sv.watchErr, sv.src.Catalog().Close())
	})
	return sv.closeErr
}
