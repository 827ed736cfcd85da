package skillserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

func fuzzServer(t testing.TB) *Server {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(filepath.Dir(file)), "examples", "skills")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	_, srv, err := New(nil, published.NewCatalogSource(cat), &Options{Logger: log, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// checkErr asserts the error contract: a JSON-RPC error with a known code,
// data that is valid JSON, a bounded message naming the URI.
func checkErr(t *testing.T, method, uri string, err error) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("%s %q: error %v is not a JSON-RPC error", method, uri, err)
	}
	if we.Code != jsonrpc.CodeInvalidParams && we.Code != jsonrpc.CodeInternalError {
		t.Fatalf("%s %q: code %d", method, uri, we.Code)
	}
	if we.Data != nil && !json.Valid(we.Data) {
		t.Fatalf("%s %q: data %q is not JSON", method, uri, we.Data)
	}
	if len(we.Message) > 1024 || !utf8.ValidString(we.Message) {
		t.Fatalf("%s %q: message of %d bytes, valid UTF-8 %v", method, uri, len(we.Message), utf8.ValidString(we.Message))
	}
	if uri != "" && !strings.Contains(we.Message, show(uri)) {
		t.Fatalf("%s %q: message %q does not name the URI", method, uri, we.Message)
	}
}

// FuzzURI feeds arbitrary URIs to every method that takes one. A method
// succeeds only for a URI the snapshot publishes byte for byte, and the
// bytes it serves are that file's; everything else is a well-formed error.
func FuzzURI(f *testing.F) {
	for _, s := range []string{
		"skill://pdf-processing/SKILL.md", "skill://pdf-processing", "skill://acme", "skill://acme/billing/refunds/examples/email.md",
		"skill://pdf-processing/../acme/billing/refunds/SKILL.md", "skill://%2e%2e/x", "skill://a%2Fb/SKILL.md",
		"skill://pdf-processing\\SKILL.md", "skill://pdf-processing/SKILL.md\x00", "file:///etc/passwd", "/etc/passwd",
		"skill://u@pdf-processing:1/SKILL.md?q#f", "skill://pdf-processing/", "SKILL://pdf-processing/SKILL.md", "",
	} {
		f.Add(s)
	}
	srv := fuzzServer(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, uri string) {
		snap := srv.src.Snapshot()
		file, dir, sk := snap.File(uri), snap.Dir(uri), snap.Skill(uri)

		res, err := srv.read(ctx, uri)
		if file == nil {
			if err == nil {
				t.Fatalf("resources/read %q succeeded for a URI that is not published", uri)
			}
			checkErr(t, "resources/read", uri, err)
		} else {
			if err != nil {
				t.Fatalf("resources/read %q: %v", uri, err)
			}
			c := res.Contents[0]
			data := []byte(c.Text)
			if c.Blob != nil {
				data = c.Blob
			}
			want, _ := snap.ReadFile(ctx, file)
			if c.URI != uri || !bytes.Equal(data, want) {
				t.Fatalf("resources/read %q served other bytes", uri)
			}
		}

		g, err := srv.getSkill(ctx, &wire.GetSkillParams{URI: uri})
		if sk == nil {
			if err == nil {
				t.Fatalf("skills/get %q succeeded", uri)
			}
			checkErr(t, "skills/get", uri, err)
		} else if err != nil || g.Skill.URI != uri {
			t.Fatalf("skills/get %q: %v", uri, err)
		}

		d, err := srv.readDirectory(ctx, &wire.ReadDirectoryParams{URI: uri})
		if dir == nil {
			if err == nil {
				t.Fatalf("resources/directory/read %q succeeded", uri)
			}
			checkErr(t, "resources/directory/read", uri, err)
		} else {
			if err != nil {
				t.Fatalf("resources/directory/read %q: %v", uri, err)
			}
			for _, e := range d.Resources {
				rest, ok := strings.CutPrefix(e.URI, uri+"/")
				if !ok || rest == "" || strings.Contains(rest, "/") {
					t.Fatalf("resources/directory/read %q listed %q, not a direct child", uri, e.URI)
				}
			}
		}
	})
}

// FuzzCursor feeds arbitrary cursors to the list methods: each is accepted
// only if this server issued it, and never crashes or loops.
func FuzzCursor(f *testing.F) {
	srv := fuzzServer(f)
	first, err := srv.listSkills(context.Background(), &wire.ListSkillsParams{})
	if err != nil || first.NextCursor == "" {
		f.Fatalf("the example catalog does not page at size 2: %v", err)
	}
	for _, s := range []string{first.NextCursor, "", "sp1.", "sp1.AAAA", "abc", strings.Repeat("A", 10000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cur string) {
		c, derr := decodeCursor(srv.key, cur)
		if derr == nil && c.encode(srv.key) != cur {
			t.Fatalf("cursor %q decodes but does not re-encode to itself", cur)
		}
		res, err := srv.listSkills(context.Background(), &wire.ListSkillsParams{Cursor: cur})
		if err != nil {
			checkErr(t, "skills/list", "", err)
			return
		}
		if len(res.Skills) > srv.opts.PageSize {
			t.Fatalf("page of %d skills", len(res.Skills))
		}
		if cur != "" && derr != nil {
			t.Fatalf("skills/list accepted cursor %q that does not verify", cur)
		}
	})
}
