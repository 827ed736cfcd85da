package endpoint

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/skillport/skillport/skillserver"
)

// MaxCachedTokens bounds the verified tokens an [Auth] remembers. Past it,
// expired entries are dropped, and if that is not enough the cache starts
// over: a flood of distinct tokens costs verification, not memory.
const MaxCachedTokens = 10000

// tokenCache remembers verified tokens until they expire, so that a client
// sending the same token on every request pays for signature checking (or
// an introspection round trip) once. Keys are SHA-256 digests of the raw
// token, so the cache holds no credential.
type tokenCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verified
}

// verified is a verified token's information and the caller it makes
// (shared by every request with the token: neither is ever modified).
type verified struct {
	ti     *auth.TokenInfo
	caller *skillserver.Caller
}

func (c *tokenCache) get(tok string, now time.Time) (verified, bool) {
	k := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	if !ok {
		return verified{}, false
	}
	if !now.Before(v.ti.Expiration) {
		delete(c.m, k)
		return verified{}, false
	}
	return v, true
}

// put remembers ti, a verified token's information, until it expires.
// Tokens without an expiry are never cached.
func (c *tokenCache) put(tok string, v verified, now time.Time) {
	if v.ti.Expiration.IsZero() || !now.Before(v.ti.Expiration) {
		return
	}
	k := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[sha256.Size]byte]verified{}
	}
	if len(c.m) >= MaxCachedTokens {
		for k, v := range c.m {
			if !now.Before(v.ti.Expiration) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= MaxCachedTokens {
			clear(c.m)
		}
	}
	c.m[k] = v
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
