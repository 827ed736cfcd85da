package skillserver_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillserver"
)

// loadSource serves "open" (with a second file) and "big" (a SKILL.md
// large enough to be streamed) to everyone, and "secret" to alice only.
type loadSource struct {
	skills map[string]*catalog.Skill
	files  map[string][]byte
}

func newLoadSource(t *testing.T) *loadSource {
	t.Helper()
	src := &loadSource{skills: map[string]*catalog.Skill{}, files: map[string][]byte{}}
	for name, files := range map[string]map[string][]byte{
		"open":   {"SKILL.md": []byte(skillMD("open", "Everyone sees it.")), "references/GUIDE.md": []byte("# Guide\n")},
		"big":    {"SKILL.md": []byte(skillMD("big", "A large SKILL.md.") + strings.Repeat("Long instructions.\n", 5000))},
		"secret": {"SKILL.md": []byte(skillMD("secret", "Only alice sees it."))},
	} {
		sk, err := catalog.NewSkill("skill://"+name, files)
		if err != nil {
			t.Fatal(err)
		}
		src.skills[name] = sk
		for p, b := range files {
			src.files["skill://"+name+"/"+p] = b
		}
	}
	return src
}

func (s *loadSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	out := []*catalog.Skill{s.skills["big"], s.skills["open"]}
	if c := skillserver.CallerFromContext(ctx); c != nil && c.Subject == "alice" {
		out = append(out, s.skills["secret"])
	}
	return out, nil
}

func (s *loadSource) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	return s.files[f.URI], nil
}

// loads records what Options.OnSkillLoaded is told.
type loads struct {
	mu  sync.Mutex
	got []string
}

func (l *loads) loaded(ctx context.Context, path string) {
	who := ""
	if c := skillserver.CallerFromContext(ctx); c != nil {
		who = c.Subject
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, path+" by "+who)
}

// take returns what was recorded since the last take.
func (l *loads) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

// loadCalls are requests and the load each must count ("" none), as
// "path by caller" for the caller user.
var loadCalls = []struct {
	method, uri, user, want string
}{
	{"skills/get", "skill://open/SKILL.md", "", "open by "},
	{"skills/get", "skill://open/SKILL.md", "alice", "open by alice"},
	{"skills/get", "skill://secret/SKILL.md", "bob", ""}, // hidden from bob: an error
	{"skills/get", "skill://secret/SKILL.md", "alice", "secret by alice"},
	{"skills/get", "skill://nope/SKILL.md", "", ""},
	{"skills/get", "skill://open", "", ""}, // a directory, not a skill
	{"resources/read", "skill://open/SKILL.md", "", "open by "},
	{"resources/read", "skill://big/SKILL.md", "carol", "big by carol"}, // streamed
	{"resources/read", "skill://open/references/GUIDE.md", "", ""},      // another file
	{"resources/read", "skill://secret/SKILL.md", "bob", ""},
	{"resources/read", "skill://secret/SKILL.md", "alice", "secret by alice"},
	{"resources/read", "skill://nope/SKILL.md", "", ""},
	{"skills/list", "", "alice", ""},
	{"resources/directory/read", "skill://open", "", ""},
}

// TestOnSkillLoaded: the server tells Options.OnSkillLoaded of each
// skills/get and each resources/read of a SKILL.md it answers with a
// result, once, with the caller, whichever path answers (the thin read
// path or go-sdk's handlers, over HTTP in both revisions and over stdio);
// never of errors, other files, or skills the caller is not served.
func TestOnSkillLoaded(t *testing.T) {
	src := newLoadSource(t)
	for _, noFast := range []bool{false, true} {
		var l loads
		opts := &skillserver.Options{Logger: discard, NoFastPath: noFast, CacheScope: "private", OnSkillLoaded: l.loaded}
		t.Run(fmt.Sprintf("http/noFastPath=%v", noFast), func(t *testing.T) {
			_, srv, err := skillserver.New(nil, skillserver.FromSkills(src), opts)
			if err != nil {
				t.Fatal(err)
			}
			h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard, Stateless: true})
			t.Cleanup(func() { h.Close() })
			// Stands for package endpoint, which names the caller of a
			// verified token.
			url := mount(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if u := r.Header.Get("X-Test-User"); u != "" {
					r = r.WithContext(skillserver.ContextWithCaller(r.Context(), &skillserver.Caller{Subject: u}))
				}
				h.ServeHTTP(w, r)
			})).url
			for _, modern := range []bool{true, false} {
				for _, c := range loadCalls {
					params := `{"uri":"` + c.uri + `"}`
					if c.method == "skills/list" {
						params = `{}`
					}
					hd := headers("X-Test-User", c.user)
					if modern {
						params = withMeta(params, true)
						hd = headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", c.method, "Mcp-Name", c.uri, "X-Test-User", c.user)
					}
					before := skillserver.FastServed(srv)
					ex := rawPost(t, url, hd, request("1", c.method, params))
					checkLoad(t, fmt.Sprintf("modern=%v %s %s as %q", modern, c.method, c.uri, c.user), c.want, ex.body, l.take())
					if thin := skillserver.FastServed(srv) > before; thin != (!noFast && !strings.Contains(ex.body, `"error"`)) {
						t.Errorf("%s %s: answered by the thin path: %v (%s)", c.method, c.uri, thin, ex.body)
					}
				}
			}
		})
		t.Run(fmt.Sprintf("stdio/noFastPath=%v", noFast), func(t *testing.T) {
			s, srv, err := skillserver.New(nil, skillserver.FromSkills(src), opts)
			if err != nil {
				t.Fatal(err)
			}
			lines := startLines(t, s, srv)
			lines.call(initLine(true))
			for _, c := range loadCalls {
				if c.user != "" {
					continue // stdio has one caller: anonymous
				}
				params := `{"uri":"` + c.uri + `"}`
				before := skillserver.FastServed(srv)
				body := lines.call(request("1", c.method, params))
				checkLoad(t, c.method+" "+c.uri, c.want, body, l.take())
				if thin := skillserver.FastServed(srv) > before; thin != (!noFast && !strings.Contains(body, `"error"`)) {
					t.Errorf("%s %s: answered by the thin path: %v (%s)", c.method, c.uri, thin, body)
				}
			}
			// The large read, anonymously: streamed on stdio too.
			checkLoad(t, "big", "big by ", lines.call(request("2", "resources/read", `{"uri":"skill://big/SKILL.md"}`)), l.take())
		})
	}
}

// checkLoad checks that a response body came with exactly the load want
// ("" none).
func checkLoad(t *testing.T, what, want, body string, got []string) {
	t.Helper()
	var w []string
	if want != "" {
		w = []string{want}
		if strings.Contains(body, `"error"`) {
			t.Errorf("%s: an error: %.300s", what, body)
		}
	}
	if !slices.Equal(got, w) {
		t.Errorf("%s: loads %q, want %q", what, got, w)
	}
}
