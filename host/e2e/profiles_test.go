//go:build !skillport_no_index && !skillport_no_sep2076 && !skillport_no_seed001 && !skillport_no_legacy

package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// serveProfiles runs our server over the examples with only the given
// profiles and returns an origin connected to it in process.
func serveProfiles(t *testing.T, dir string, profiles ...skillserver.Profile) host.Origin {
	t.Helper()
	o, _ := serveCounted(t, dir, profiles...)
	return o
}

// rememberingApprover allows and asks to remember; it counts requests.
type rememberingApprover struct{ asked atomic.Int32 }

func (a *rememberingApprover) Approve(context.Context, *approval.Request) (approval.Decision, error) {
	a.asked.Add(1)
	return approval.Decision{Allow: true, Remember: true}, nil
}

// TestProfilesRoundTrip: our host reads our server through each profile
// and builds the same registry entries; what it could not verify is
// marked, and approvals of such skills are never persisted.
func TestProfilesRoundTrip(t *testing.T) {
	want := exampleCount(t)
	cases := []struct {
		name       string
		profiles   []skillserver.Profile
		profile    string
		unverified string
	}{
		{"sep2640 preferred", nil, "", ""},
		{"index", []skillserver.Profile{skillserver.ProfileIndex}, host.ProfileIndex, "SKILL.md only"},
		{"sep2076", []skillserver.Profile{skillserver.ProfileSEP2076}, host.ProfileLegacy, "no digests"},
		{"seed001", []skillserver.Profile{skillserver.ProfileSeed001}, host.ProfileLegacy, "no digests"},
	}
	ref := map[string]*host.Entry{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ap := &rememberingApprover{}
			h, err := host.New([]host.Origin{serveProfiles(t, examples, tc.profiles...)}, &host.Options{
				Approver: ap, Logger: quiet, CallTimeout: 20 * time.Second, AllowDynamic: tc.profile != "",
			})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx := context.Background()
			if err := h.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			st := h.Origins()[0]
			if st.Err != nil || st.Profile != tc.profile || st.Declared != (tc.profile == "") {
				t.Fatalf("origin %+v, want profile %q", st, tc.profile)
			}
			skills := h.Skills()
			if len(skills) != want {
				t.Fatalf("%d skills, want %d", len(skills), want)
			}
			if len(ref) == 0 {
				for _, e := range skills {
					ref[e.Name] = e
				}
			}
			for _, e := range skills {
				r := ref[e.Name]
				if r == nil || e.Description() != r.Description() || e.Profile != tc.profile || e.Origin != r.Origin {
					t.Errorf("%s %q profile %q: not the entry SEP-2640 gives", e.Name, e.Description(), e.Profile)
					continue
				}
				if tc.profile != "" && (!e.Dynamic || !strings.Contains(e.Unverified, tc.unverified)) {
					t.Errorf("%s: dynamic=%v unverified=%q", e.Name, e.Dynamic, e.Unverified)
				}
				for range 2 {
					l, err := h.Load(ctx, e)
					if err != nil {
						t.Fatalf("load %s: %v", e.Name, err)
					}
					wantBody, err := os.ReadFile(filepath.Join(examples, refDir(t, r), "SKILL.md"))
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasSuffix(string(wantBody), string(l.Document.Body)) || len(l.Document.Body) == 0 {
						t.Errorf("%s: body %q", e.Name, l.Document.Body)
					}
				}
			}
			// Content-bound approvals are remembered for SEP-2640 only.
			perSkill := int32(1)
			if tc.profile != "" {
				perSkill = 2
			}
			if got := ap.asked.Load(); got != perSkill*int32(len(skills)) {
				t.Errorf("approval asked %d times for %d skills loaded twice, want %d", got, len(skills), perSkill*int32(len(skills)))
			}
		})
	}

	t.Run("index without AllowDynamic", func(t *testing.T) {
		h, err := host.New([]host.Origin{serveProfiles(t, examples, skillserver.ProfileIndex)}, &host.Options{Approver: allow(), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		h.Connect(context.Background())
		for _, e := range h.Skills() {
			if _, err := h.Load(context.Background(), e); !errors.Is(err, host.ErrDeclined) {
				t.Errorf("%s: %v, want declined", e.Name, err)
			}
		}
	})

	t.Run("index digest mismatch", func(t *testing.T) {
		dir := t.TempDir()
		os.CopyFS(dir, os.DirFS(examples))
		origin := serveProfiles(t, dir, skillserver.ProfileIndex)
		h, err := host.New([]host.Origin{origin}, &host.Options{Approver: allow(), Logger: quiet, AllowDynamic: true})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		h.Connect(context.Background())
		e := h.Skills()[0]
		// The server re-indexes a changed file on read; a host holding the
		// old index digest must refuse the new bytes.
		p := filepath.Join(dir, refDir(t, e), "SKILL.md")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, append(b, []byte("\nInjected line.\n")...), 0o644)
		var verr *host.VerificationError
		if _, err := h.Load(context.Background(), e); !errors.As(err, &verr) || verr.Reason != host.ReasonDigest {
			t.Errorf("load after change: %v, want a digest verification error", err)
		}
	})
}

// refDir maps an entry to its directory under the examples.
func refDir(t *testing.T, e *host.Entry) string {
	t.Helper()
	return strings.TrimPrefix(strings.TrimSuffix(e.URI, "/SKILL.md"), "skill://")
}

// callLog records the requests a server received, method and params.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// countingTransport is the server side of a connection, recording every
// request that reaches the server.
type countingTransport struct {
	mcp.Transport
	log *callLog
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: c, log: t.log}, nil
}

type countingConn struct {
	mcp.Connection
	log *callLog
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Request); ok && err == nil && r.IsCall() {
		c.log.mu.Lock()
		c.log.calls = append(c.log.calls, r.Method+" "+string(r.Params))
		c.log.mu.Unlock()
	}
	return msg, err
}

// serveCounted is serveProfiles with every request the server receives
// recorded.
func serveCounted(t *testing.T, dir string, profiles ...skillserver.Profile) (host.Origin, *callLog) {
	t.Helper()
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: quiet, Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := &callLog{}
	go s.Run(ctx, &countingTransport{Transport: st, log: log})
	return host.Origin{Label: "own", Transport: ct}, log
}

// TestLegacySupportingFiles: a host connected to our server through one
// legacy profile reads the supporting files of a skill byte for byte,
// through that profile's method on the same server, marked unverified;
// a path the server did not list, or one climbing out of the skill, is
// refused with the error a SEP-2640 skill gets, and no request for it
// reaches the server.
func TestLegacySupportingFiles(t *testing.T) {
	cases := []struct {
		profile skillserver.Profile
		method  string // how a supporting file is read
	}{
		{skillserver.ProfileSEP2076, "resources/read"},
		{skillserver.ProfileSeed001, "skills/read_reference"},
	}
	for _, tc := range cases {
		t.Run(string(tc.profile), func(t *testing.T) {
			origin, calls := serveCounted(t, examples, tc.profile)
			ap := &rememberingApprover{}
			h, err := host.New([]host.Origin{origin}, &host.Options{Approver: ap, Logger: quiet, CallTimeout: 20 * time.Second, AllowDynamic: true})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx := context.Background()
			if err := h.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if st := h.Origins()[0]; st.Profile != host.ProfileLegacy {
				t.Fatalf("origin profile %q, want %q", st.Profile, host.ProfileLegacy)
			}
			tools := h.Tools()
			out, err := tools.ReadSkill(ctx, "pdf-processing")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"references/FORMS.md", "scripts/extract_text.py", "assets/logo.png"} {
				if !strings.Contains(out, "<file>"+f+"</file>") {
					t.Errorf("read_skill does not list %s:\n%s", f, out)
				}
			}
			if ap.asked.Load() != 1 {
				t.Errorf("approval asked %d times for one load", ap.asked.Load())
			}
			l, err := tools.Active("pdf-processing")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"references/FORMS.md", "scripts/extract_text.py", "assets/logo.png"} {
				want, err := os.ReadFile(filepath.Join(examples, "pdf-processing", p))
				if err != nil {
					t.Fatal(err)
				}
				before := len(calls.snapshot())
				f, err := l.ReadFile(ctx, p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if !bytes.Equal(f.Data, want) || f.Verified || f.Path != p {
					t.Errorf("%s: %d bytes (want %d), verified=%v, path %q", p, len(f.Data), len(want), f.Verified, f.Path)
				}
				got := calls.snapshot()[before:]
				if len(got) != 1 || !strings.HasPrefix(got[0], tc.method+" ") {
					t.Errorf("%s: the server received %q, want one %s", p, got, tc.method)
				}
			}
			// Reading files opens no further approval.
			if ap.asked.Load() != 1 {
				t.Errorf("approval asked %d times after file reads", ap.asked.Load())
			}
			txt, err := tools.ReadSkillFile(ctx, "pdf-processing", "references/FORMS.md")
			if err != nil || !strings.Contains(txt, `trust="untrusted unverified"`) {
				t.Errorf("read_skill_file: %v\n%s", err, txt)
			}
			dir, err := tools.ListSkillDir(ctx, "pdf-processing", "references")
			if err != nil || !strings.Contains(dir, "<file>FORMS.md</file>") {
				t.Errorf("list_skill_dir references: %v\n%s", err, dir)
			}

			before := calls.snapshot()
			for _, ref := range []struct {
				path   string
				reason host.Reason
			}{
				{"references/NOT-LISTED.md", host.ReasonUnlisted},
				{"SKILL.md", host.ReasonUnlisted},
				{"../code-review/SKILL.md", host.ReasonOutsideRoot},
				{"../other/SKILL.md", host.ReasonOutsideRoot},
				{"references/../../code-review/references/CHECKLIST.md", host.ReasonOutsideRoot},
			} {
				var nerr *host.NoSuchFileError
				if _, err := l.ReadFile(ctx, ref.path); !errors.As(err, &nerr) || nerr.Reason != ref.reason {
					t.Errorf("%s: %v, want no such file, %q", ref.path, err, ref.reason)
				}
				if _, err := tools.ReadSkillFile(ctx, "pdf-processing", ref.path); !errors.Is(err, host.ErrNoSuchFile) || errors.Is(err, host.ErrVerification) {
					t.Errorf("read_skill_file %s: %v, want ErrNoSuchFile", ref.path, err)
				}
			}
			if after := calls.snapshot(); len(after) != len(before) {
				t.Errorf("refused reads reached the server: %q", after[len(before):])
			}

			// A nested skill's file: SEP-2076 lists it with the server's own
			// URI, which the host reads as listed; seed 001 lists only
			// references/, scripts/ and assets/, so the host refuses it.
			if _, err := tools.ReadSkill(ctx, "refunds"); err != nil {
				t.Fatal(err)
			}
			nested, err := tools.Active("refunds")
			if err != nil {
				t.Fatal(err)
			}
			mark := len(calls.snapshot())
			f, err := nested.ReadFile(ctx, "examples/email.md")
			switch tc.profile {
			case skillserver.ProfileSEP2076:
				want, _ := os.ReadFile(filepath.Join(examples, "acme/billing/refunds/examples/email.md"))
				if err != nil || !bytes.Equal(f.Data, want) || f.URI != "skill://acme/billing/refunds/examples/email.md" {
					t.Errorf("refunds examples/email.md: %+v, %v", f, err)
				}
			default:
				var nerr *host.NoSuchFileError
				if !errors.As(err, &nerr) || nerr.Reason != host.ReasonUnlisted || len(calls.snapshot()) != mark {
					t.Errorf("refunds examples/email.md over seed 001: %v, want unlisted and no request", err)
				}
			}

			// The acting window ends with the skill's release.
			tools.Release("pdf-processing")
			if _, err := l.ReadFile(ctx, "references/FORMS.md"); !errors.Is(err, host.ErrNotLoaded) {
				t.Errorf("read after release: %v, want ErrNotLoaded", err)
			}
		})
	}
}
