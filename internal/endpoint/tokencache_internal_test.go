package endpoint

import (
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestTokenCacheBounded floods the cache with distinct tokens: it never
// holds more than MaxCachedTokens, never answers for an expired token, and
// never caches one without an expiry.
func TestTokenCacheBounded(t *testing.T) {
	var c tokenCache
	now := time.Now()
	live := &auth.TokenInfo{UserID: "u", Expiration: now.Add(time.Hour)}
	for i := range 3 * MaxCachedTokens {
		c.put(fmt.Sprint("tok-", i), verified{ti: live}, now)
		if n := c.len(); n > MaxCachedTokens {
			t.Fatalf("after %d tokens the cache holds %d, more than %d", i+1, n, MaxCachedTokens)
		}
	}
	c.put("short", verified{ti: &auth.TokenInfo{Expiration: now.Add(time.Second)}}, now)
	if _, ok := c.get("short", now); !ok {
		t.Fatal("a fresh token was not cached")
	}
	if _, ok := c.get("short", now.Add(2*time.Second)); ok {
		t.Error("an expired token was answered from the cache")
	}
	c.put("forever", verified{ti: &auth.TokenInfo{}}, now)
	if _, ok := c.get("forever", now); ok {
		t.Error("a token without exp was cached")
	}
}
