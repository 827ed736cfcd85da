package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/server"
)

// serveProfiles runs our server over the examples with only the given
// profiles and returns an origin connected to it in process.
func serveProfiles(t *testing.T, dir string, profiles ...server.Profile) host.Origin {
	t.Helper()
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := server.New(nil, server.NewCatalogSource(cat), &server.Options{Logger: quiet, Profiles: profiles})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, st)
	return host.Origin{Label: "own", Transport: ct}
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
		profiles   []server.Profile
		profile    string
		unverified string
	}{
		{"sep2640 preferred", nil, "", ""},
		{"index", []server.Profile{server.ProfileIndex}, host.ProfileIndex, "SKILL.md only"},
		{"sep2076", []server.Profile{server.ProfileSEP2076}, host.ProfileLegacy, "no digests"},
		{"seed001", []server.Profile{server.ProfileSeed001}, host.ProfileLegacy, "no digests"},
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
		h, err := host.New([]host.Origin{serveProfiles(t, examples, server.ProfileIndex)}, &host.Options{Approver: allow(), Logger: quiet})
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
		origin := serveProfiles(t, dir, server.ProfileIndex)
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
