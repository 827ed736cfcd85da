package skillserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/jsonobj"
)

// TestMetaCacheBounded: what the thin path keeps of the _meta clients
// send stays within its bounds against a client that sends a different
// _meta with every request or a huge one, and an entry read for one
// revision is not taken for another.
func TestMetaCacheBounded(t *testing.T) {
	var c metaCache
	read := func(raw, version string) bool {
		fs, err := jsonobj.Fields([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, _, ok := c.read([]byte(raw), fs, version)
		return ok
	}
	meta := func(name string) string {
		return fmt.Sprintf(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`, name)
	}
	for i := range 10 * maxMetaCache {
		if !read(meta(fmt.Sprint("client-", i)), ModernProtocolVersion) {
			t.Fatalf("request %d: a valid _meta was declined", i)
		}
		if n := len(c.m); n > maxMetaCache {
			t.Fatalf("after %d different _meta the cache holds %d entries, its bound is %d", i+1, n, maxMetaCache)
		}
	}
	huge := meta(strings.Repeat("x", 2*maxCachedMeta))
	if !read(huge, ModernProtocolVersion) {
		t.Fatal("a valid large _meta was declined")
	}
	if _, kept := c.m[huge]; kept {
		t.Fatalf("a %d-byte _meta was kept; only those up to %d bytes are", len(huge), maxCachedMeta)
	}
	m := meta("same")
	if !read(m, ModernProtocolVersion) || read(m, "2099-01-01") || !read(m, ModernProtocolVersion) {
		t.Fatal("an entry read for one revision answered for another")
	}
}
