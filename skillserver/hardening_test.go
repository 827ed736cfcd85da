package skillserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/skillserver"
)

// hostileURIs are URIs that try to reach outside the served root or to
// name a published file in a non-canonical way. root is the
// directory holding the served tree and the canary.
func hostileURIs(root string) []string {
	return []string{
		// dot segments
		"skill://alpha/../team/beta/SKILL.md",
		"skill://alpha/references/../../../canary.txt",
		"skill://../canary.txt",
		"skill://alpha/./SKILL.md",
		// encoded dots, double encoding
		"skill://%2e%2e/canary.txt",
		"skill://alpha/%2e%2e/%2e%2e/canary.txt",
		"skill://alpha/%2E%2e/SKILL.md",
		"skill://alpha/.%2e/.%2e/canary.txt",
		"skill://alpha/%252e%252e/%252e%252e/canary.txt",
		// encoded separators
		"skill://alpha%2FSKILL.md",
		"skill://alpha/references%2FGUIDE.md",
		"skill://alpha/references%5CGUIDE.md",
		"skill://alpha/..%2F..%2Fcanary.txt",
		// backslashes
		`skill://alpha\SKILL.md`,
		`skill://alpha/..\..\canary.txt`,
		`\\host\share\canary.txt`,
		`C:\canary.txt`,
		// absolute paths and odd forms
		"skill:///etc/passwd",
		"skill:///" + filepath.ToSlash(root) + "/canary.txt",
		"skill:alpha/SKILL.md",
		"//alpha/SKILL.md",
		"/etc/passwd",
		filepath.Join(root, "canary.txt"),
		filepath.Join(root, "skills", "alpha", "SKILL.md"),
		"../canary.txt",
		"alpha/SKILL.md",
		// userinfo, port, query, fragment
		"skill://u:p@alpha/SKILL.md",
		"skill://alpha:80/SKILL.md",
		"skill://alpha/SKILL.md?x=../../canary.txt",
		"skill://alpha/SKILL.md#frag",
		// empty segments, trailing slash
		"skill://alpha//SKILL.md",
		"skill://alpha/references/",
		"skill://alpha/SKILL.md/",
		// NUL and control characters
		"skill://alpha/SKILL.md\x00",
		"skill://alpha/SKILL.md%00",
		"skill://alpha/SKILL.md\n",
		"skill://alpha/\x00../../canary.txt",
		// oversized
		"skill://alpha/" + strings.Repeat("a/", 5000) + "SKILL.md",
		// case and Unicode variants
		"SKILL://alpha/SKILL.md",
		"skill://ALPHA/SKILL.md",
		"skill://alpha/skill.md",
		"skill://alpha/SKILL.ｍd",
		// wrong schemes
		"file:///etc/passwd",
		"file://" + filepath.ToSlash(root) + "/canary.txt",
		"file:../canary.txt",
		"https://example.com/alpha/SKILL.md",
		"javascript:alert(1)",
		"",
		// Skills left out because they reach outside the root.
		"skill://leaky/SKILL.md",
		"skill://leaky/link.txt",
		"skill://linked/SKILL.md",
		"skill://linked/secret.md",
		"skill://alpha/escape/SKILL.md",
		"skill://alpha/escape",
	}
}

// TestHostileURIs sends every hostile URI to every method that takes one:
// each gets -32602 with a message naming the URI and data.uri, and no
// response ever contains a byte of the canary next to the served root.
func TestHostileURIs(t *testing.T) {
	files := baseFiles()
	files["leaky/SKILL.md"] = skillMD("leaky", "links outside the root")
	f := newFixture(t, files, nil)
	// Symlinks out of the root: a file, a whole skill directory, and a
	// directory inside an otherwise valid skill.
	mustSymlink(t, filepath.Join(f.Root, "canary.txt"), filepath.Join(f.Dir, "leaky", "link.txt"))
	mustSymlink(t, filepath.Join(f.Root, "secret"), filepath.Join(f.Dir, "linked"))
	f.reload(t)
	if f.Src.Snapshot().Skill("skill://leaky/SKILL.md") != nil || f.Src.Snapshot().Skill("skill://alpha/SKILL.md") == nil {
		t.Fatal("the fixture does not exclude the skill with an escaping symlink")
	}
	// A symlink created after the snapshot, inside a published skill.
	mustSymlink(t, filepath.Join(f.Root, "secret"), filepath.Join(f.Dir, "alpha", "escape"))

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		c := connectRaw(t, f.MCP, version)
		for _, uri := range hostileURIs(f.Root) {
			for _, method := range []string{"resources/read", "skills/get", "resources/directory/read", "resources/subscribe"} {
				_, rerr, raw := c.call(method, map[string]any{"uri": uri})
				if bytes.Contains(raw, []byte(canary)) {
					t.Fatalf("%s %q: the response contains the canary: %s", method, uri, raw)
				}
				if rerr == nil {
					t.Errorf("%s %q succeeded: %.300s", method, uri, raw)
					continue
				}
				if rerr.Code != -32602 {
					t.Errorf("%s %q: code %d, want -32602", method, uri, rerr.Code)
				}
				if uri != "" && !strings.Contains(rerr.Message, skillserver.Show(uri)) {
					t.Errorf("%s %q: message %q does not name the URI", method, uri, rerr.Message)
				}
				var data struct {
					URI string `json:"uri"`
				}
				if err := json.Unmarshal(rerr.Data, &data); method != "resources/subscribe" && (err != nil || !strings.HasPrefix(uri, data.URI) || (len(uri) <= skillserver.MaxURILength && data.URI != uri && strings.ToValidUTF8(uri, "\uFFFD") != data.URI)) {
					t.Errorf("%s %q: data %s, want {\"uri\": <as received>}", method, uri, rerr.Data)
				}
				if len(raw) > 3*skillserver.MaxURILength {
					t.Errorf("%s %q: %d-byte error response echoes the oversized URI", method, uri, len(raw))
				}
			}
		}
		// Listings never contain the canary either.
		for _, method := range []string{"skills/list", "resources/list"} {
			if _, _, raw := c.call(method, map[string]any{}); bytes.Contains(raw, []byte(canary)) {
				t.Fatalf("%s contains the canary", method)
			}
		}
		if bytes.Contains(c.all, []byte(canary)) {
			t.Fatal("a message from the server contains the canary")
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("symlink: %v", err)
	}
}

// TestSymlinkSwappedIn replaces a published file with a symlink to the
// canary after the snapshot was built: the read must not follow it.
func TestSymlinkSwappedIn(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	p := filepath.Join(f.Dir, "alpha", "references", "GUIDE.md")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, filepath.Join(f.Root, "canary.txt"), p)
	_, rerr, raw := c.call("resources/read", map[string]any{"uri": "skill://alpha/references/GUIDE.md"})
	if bytes.Contains(raw, []byte(canary)) {
		t.Fatalf("the read followed a symlink out of the root: %s", raw)
	}
	if rerr == nil {
		t.Fatalf("reading a file swapped for an escaping symlink succeeded: %s", raw)
	}
	if _, _, raw := c.call("skills/list", map[string]any{}); bytes.Contains(raw, []byte(canary)) {
		t.Fatal("skills/list contains the canary")
	}
}
