// Package regapi is a governed registry's write API over HTTP: a replica
// started with `skillport serve --accept-publish` accepts publishes,
// rollbacks, yanks, reviews and review-mode changes from callers with an
// OAuth bearer token, checked by the same resource-server code that
// protects reads (endpoint.Auth.Require, given as [Options.Require]), and decides what each caller may do
// with the roles of the rules file ([access.Rules.Allowed]). Publishers
// never hold the database's credentials. [Client] is the other side, used
// by `skillport publish https://…` and the registry commands.
//
// Routes, under [Prefix]:
//
//	POST publish?namespace=NS[&commit=C][&dotfiles=1]   body: a tar.gz of the tree and its skills'
//	                                                   signature bundles ([WriteArchive])
//	POST rollback | yank | approve | reject            body: a [Change]
//	POST review-mode                                   body: a [ModeChange]
//	GET  versions?skill=PATH
//	GET  audit[?since=RFC3339]                         JSON lines, admin of the root namespace
//
// Errors answer {"error": "...", "namespace": ..., "role": ...} with 401
// (no or bad token), 403 (a role missing, or a publisher reviewing their
// own version), 404 (unknown skill or version), 409 (a stale approval, a
// version not pending, a conflicting publish), 413 (too large), 422
// (invalid skills, a signature bundle refused, a rejection without
// reason) or 503 (busy).
package regapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/skillserver"
)

// Prefix is where the API is mounted.
const Prefix = "/registry/v1/"

// MaxChangeBytes bounds the JSON body of a change request.
const MaxChangeBytes = 64 << 10

// Change is the body of rollback, yank, approve and reject.
type Change struct {
	Skill   string `json:"skill"`
	Version int    `json:"version"`
	// Digest is the version digest the reviewer reviewed (approve).
	Digest string `json:"digest,omitempty"`
	// Reason says why (yank, reject).
	Reason string `json:"reason,omitempty"`
}

// ModeChange is the body of review-mode.
type ModeChange struct {
	Namespace string `json:"namespace"`
	Mode      string `json:"mode"`
}

// ErrorBody is what a refused request answers.
type ErrorBody struct {
	Error     string `json:"error"`
	Namespace string `json:"namespace,omitempty"`
	Role      string `json:"role,omitempty"`
}

// Options configure a [Handler].
type Options struct {
	// DSN is the registry database the API writes to.
	DSN string
	// Require is the middleware that verifies bearer tokens and puts the
	// caller in the request's context: the one protecting reads
	// (endpoint.Auth.Require). Required.
	Require func(http.Handler) http.Handler
	// Allowed decides whether caller c holds role on namespace ns;
	// required (the rules file's [access.Rules.Allowed]).
	Allowed func(c *skillserver.Caller, role, ns string) bool
	// MaxArchiveBytes bounds a publish's request body (default
	// DefaultMaxArchiveBytes); Limits bound what it unpacks to.
	MaxArchiveBytes int64
	Limits          Limits
	// MaxConcurrent bounds the changes handled at once (default 2); more
	// get 503, since each holds a database connection and, for a publish,
	// a temporary tree on disk.
	MaxConcurrent int
	// Scan are the scanners every publish runs on its new versions (nil:
	// none), as a publish with the database's credentials runs them
	// (docs/registry-scanning.md); the namespace's scan policy decides
	// whether a finding blocks it.
	Scan *registry.ScanOptions
	// RequireSigned, when set, is who must have signed every skill
	// published: the verifier its For gives for the namespace's first
	// segment (else "*"); an unsigned skill, or one signed by someone
	// else, refuses the publish. Nil: bundles are checked for binding
	// only, and unsigned skills are published (checkSignatures).
	RequireSigned *signature.Policy
	// Logger receives the errors that are the server's (nil: slog.Default()).
	Logger *slog.Logger
}

// Handler serves the API.
type Handler struct {
	opts Options
	pool *pgxpool.Pool
	slot chan struct{}
	mux  *http.ServeMux
	log  *slog.Logger
	// protected is mux behind the token check.
	protected http.Handler
}

// New connects to the registry and returns the API's handler. Close it.
func New(ctx context.Context, opts Options) (*Handler, error) {
	if opts.Require == nil || opts.Allowed == nil {
		return nil, errors.New("regapi: accepting publishes needs --auth-issuer and --auth-rules: the rules say who may publish, review and administer which namespaces")
	}
	if opts.MaxArchiveBytes <= 0 {
		opts.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("regapi: %w", err)
	}
	cfg.MaxConns = int32(opts.MaxConcurrent)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("regapi: %w", err)
	}
	h := &Handler{opts: opts, pool: pool, slot: make(chan struct{}, opts.MaxConcurrent), mux: http.NewServeMux(), log: opts.Logger}
	h.protected = opts.Require(h.mux)
	h.mux.HandleFunc("POST "+Prefix+"publish", h.publish)
	h.mux.HandleFunc("POST "+Prefix+"rollback", h.change)
	h.mux.HandleFunc("POST "+Prefix+"yank", h.change)
	h.mux.HandleFunc("POST "+Prefix+"approve", h.change)
	h.mux.HandleFunc("POST "+Prefix+"reject", h.change)
	h.mux.HandleFunc("POST "+Prefix+"review-mode", h.reviewMode)
	h.mux.HandleFunc("GET "+Prefix+"versions", h.versions)
	h.mux.HandleFunc("GET "+Prefix+"audit", h.audit)
	return h, nil
}

// Close releases the database connections.
func (h *Handler) Close() { h.pool.Close() }

// ServeHTTP checks the token, then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.protected.ServeHTTP(w, r)
}

// actor is the request's caller as the registry records and asks it.
func (h *Handler) actor(r *http.Request) registry.Actor {
	c := skillserver.CallerFromContext(r.Context())
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a := registry.Actor{From: host, Allow: func(role, ns string) bool { return h.opts.Allowed(c, role, ns) }}
	if c != nil {
		a.Who = c.Subject
	}
	return a
}

// withConn runs fn with a connection, one of MaxConcurrent.
func (h *Handler) withConn(w http.ResponseWriter, r *http.Request, fn func(*pgx.Conn) error) {
	select {
	case h.slot <- struct{}{}:
		defer func() { <-h.slot }()
	default:
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Error: "the registry is busy with other changes; try again in a few seconds"})
		return
	}
	c, err := h.pool.Acquire(r.Context())
	if err != nil {
		h.fail(w, err)
		return
	}
	defer c.Release()
	if err := fn(c.Conn()); err != nil {
		h.fail(w, err)
	}
}

// fail answers err: a refusal with its message and status, anything else
// as the server's error (logged; the database's message stays here).
func (h *Handler) fail(w http.ResponseWriter, err error) {
	body := ErrorBody{Error: err.Error()}
	var fe *registry.ForbiddenError
	if errors.As(err, &fe) {
		body.Namespace, body.Role = fe.Namespace, fe.Role
	}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, registry.ErrForbidden), errors.Is(err, registry.ErrSelfReview):
		status = http.StatusForbidden
	case errors.Is(err, registry.ErrUnknown):
		status = http.StatusNotFound
	case errors.Is(err, registry.ErrStale), errors.Is(err, registry.ErrNotPending), errors.Is(err, registry.ErrYanked),
		errors.Is(err, registry.ErrConflict), errors.Is(err, registry.ErrOverlap):
		status = http.StatusConflict
	case errors.Is(err, registry.ErrTooLarge), errors.Is(err, errTooBig):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, registry.ErrInvalid), errors.Is(err, registry.ErrNoReason), errors.Is(err, errArchive), errors.Is(err, errBadRequest),
		errors.Is(err, errSignature):
		status = http.StatusUnprocessableEntity
	default:
		h.log.Error("registry API", "err", err)
		body = ErrorBody{Error: "the registry could not make the change (see the server's log); nothing was changed, try again"}
	}
	writeError(w, status, body)
}

var errBadRequest = errors.New("bad request")

func writeError(w http.ResponseWriter, status int, body ErrorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (h *Handler) publish(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns := q.Get("namespace")
	a := h.actor(r)
	if r.ContentLength > h.opts.MaxArchiveBytes {
		// Refused before the body is read, and recorded like any refusal.
		h.withConn(w, r, func(conn *pgx.Conn) error {
			return h.refuse(r.Context(), conn, a, ns, fmt.Errorf("regapi: the archive is %d bytes, over the limit of %d: %w", r.ContentLength, h.opts.MaxArchiveBytes, errTooBig))
		})
		return
	}
	// A publish outside the caller's namespaces is refused before its body
	// is read, and the registry records the refusal.
	h.withConn(w, r, func(conn *pgx.Conn) error {
		if !a.Allow(registry.RolePublish, ns) && !a.Allow(registry.RoleAdmin, ns) {
			return h.refuse(r.Context(), conn, a, ns, &registry.ForbiddenError{Who: a.Who, Role: registry.RolePublish, Namespace: ns, Action: "publishing"})
		}
		dir, err := os.MkdirTemp("", "skillport-publish-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		body := http.MaxBytesReader(w, r.Body, h.opts.MaxArchiveBytes)
		if err := Extract(body, dir, h.opts.Limits); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				err = fmt.Errorf("regapi: the archive is over the limit of %d bytes: %w", h.opts.MaxArchiveBytes, errTooBig)
			}
			return h.refuse(r.Context(), conn, a, ns, err)
		}
		cat, err := catalog.OpenDir(dir, &catalog.Options{Prefix: ns, IncludeDotFiles: q.Get("dotfiles") == "1", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return h.refuse(r.Context(), conn, a, ns, fmt.Errorf("%w: %v", errArchive, err))
		}
		defer cat.Close()
		if err := checkSignatures(dir, cat, ns, h.opts.RequireSigned); err != nil {
			return h.refuse(r.Context(), conn, a, ns, err)
		}
		res, err := registry.PublishParts(r.Context(), conn, []registry.Part{{Name: "the archive", Catalog: cat, Commit: q.Get("commit")}},
			&registry.PublishOptions{Publisher: a.Who, From: a.From, Allow: a.Allow, Scan: h.opts.Scan})
		if err != nil {
			return err
		}
		writeJSON(w, res[0])
		return nil
	})
}

// refuse records a publish refused before the registry saw it (a bad or
// oversized archive) and returns err.
func (h *Handler) refuse(ctx context.Context, conn *pgx.Conn, a registry.Actor, ns string, err error) error {
	if rerr := registry.RecordRefusal(ctx, conn, a, "publish", ns, "", 0, err.Error()); rerr != nil {
		h.log.Error("registry API: recording a refusal", "err", rerr)
	}
	return err
}

func (h *Handler) change(w http.ResponseWriter, r *http.Request) {
	var c Change
	if err := decode(w, r, &c); err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		return
	}
	if c.Skill == "" || c.Version < 1 {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: `give "skill" (a skill path such as acme/pdf) and "version" (a positive number)`})
		return
	}
	a := h.actor(r)
	action := r.URL.Path[len(Prefix):]
	h.withConn(w, r, func(conn *pgx.Conn) error {
		var err error
		switch action {
		case "rollback":
			err = registry.RollbackAs(r.Context(), conn, c.Skill, c.Version, a)
		case "yank":
			err = registry.YankAs(r.Context(), conn, c.Skill, c.Version, c.Reason, a)
		case "approve":
			err = registry.Approve(r.Context(), conn, c.Skill, c.Version, c.Digest, a)
		case "reject":
			err = registry.Reject(r.Context(), conn, c.Skill, c.Version, c.Reason, a)
		}
		if err != nil {
			return err
		}
		vs, err := registry.Versions(r.Context(), conn, c.Skill)
		if err != nil {
			return err
		}
		writeJSON(w, vs)
		return nil
	})
}

func (h *Handler) reviewMode(w http.ResponseWriter, r *http.Request) {
	var m ModeChange
	if err := decode(w, r, &m); err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		return
	}
	a := h.actor(r)
	h.withConn(w, r, func(conn *pgx.Conn) error {
		if err := registry.SetReviewMode(r.Context(), conn, m.Namespace, m.Mode, a); err != nil {
			if !errors.Is(err, registry.ErrForbidden) && m.Mode != registry.ReviewOff && m.Mode != registry.ReviewObserve && m.Mode != registry.ReviewEnforce {
				return fmt.Errorf("%w: %v", errBadRequest, err)
			}
			return err
		}
		writeJSON(w, m)
		return nil
	})
}

// versions lists a skill's versions to a caller holding any role on its
// namespace: readers see what reviewers review.
func (h *Handler) versions(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("skill")
	a := h.actor(r)
	h.withConn(w, r, func(conn *pgx.Conn) error {
		vs, err := registry.Versions(r.Context(), conn, path)
		ns := ""
		if err == nil {
			ns = vs[0].Namespace
		}
		if err != nil || !(a.Allow(registry.RoleRead, ns) || a.Allow(registry.RolePublish, ns) || a.Allow(registry.RoleReview, ns) || a.Allow(registry.RoleAdmin, ns)) {
			// A skill the caller may not see is answered as an absent one.
			return fmt.Errorf("registry: skill %q: %w", path, registry.ErrUnknown)
		}
		writeJSON(w, vs)
		return nil
	})
}

// audit streams the audit log as JSON lines to an admin of the root
// namespace (the log covers every namespace).
func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if s := r.URL.Query().Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			writeError(w, http.StatusBadRequest, ErrorBody{Error: fmt.Sprintf("since=%q: give an RFC 3339 time such as 2026-01-02T15:04:05Z", s)})
			return
		}
		since = t
	}
	a := h.actor(r)
	h.withConn(w, r, func(conn *pgx.Conn) error {
		if !a.Allow(registry.RoleAdmin, "") {
			err := &registry.ForbiddenError{Who: a.Who, Role: registry.RoleAdmin, Namespace: "", Action: "reading the audit log"}
			if rerr := registry.RecordRefusal(r.Context(), conn, a, "audit", "", "", 0, err.Error()); rerr != nil {
				h.log.Error("registry API: recording a refusal", "err", rerr)
			}
			return err
		}
		w.Header().Set("Content-Type", "application/jsonl")
		enc := json.NewEncoder(w)
		if err := registry.Audit(r.Context(), conn, since, func(rec registry.AuditRecord) error { return enc.Encode(rec) }); err != nil {
			// The answer has begun: it ends short, and the client, which
			// reads whole lines, sees no final newline or a JSON error.
			h.log.Error("registry API: audit", "err", err)
			panic(http.ErrAbortHandler)
		}
		return nil
	})
}

func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxChangeBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the request body is not the JSON this route takes (at most %d bytes): %v", MaxChangeBytes, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("the request body holds more than one JSON value")
	}
	return nil
}
