package skillserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// Cursors are opaque to clients and tamper-checked: a cursor is
// "sp1." + base64url(payload || HMAC-SHA256(key, payload)[:16]). The payload
// names the list it pages (kind and, for directory reads, the directory),
// the snapshot it was issued for, the offset of the next item, the key
// of the last item returned and, for a caller's view (see published.ViewSource), a
// fingerprint of the caller. Under the same snapshot the offset is used as
// is; after a reload (a changed directory, a branch that moved) the cursor
// is refused as stale, and the client lists again from the start, so it
// never mixes pages of two catalogs.
const cursorPrefix = "sp1."

// maxCursorLength bounds what is decoded at all (cursors we issue are far shorter).
const maxCursorLength = 3 * MaxURILength

const macLength = 16

// Cursor kinds.
const (
	kindSkills    byte = 's'
	kindResources byte = 'r'
	kindDirectory byte = 'd'
)

type cursor struct {
	kind   byte
	snap   string // snapshot ID
	scope  string // directory URI for kindDirectory
	offset int
	last   string // key of the last item returned
	owner  string // cursorOwner of the snapshot: "" unless a caller's view
}

var errBadCursor = errors.New("invalid cursor")

// errStaleCursor is a genuine cursor of a snapshot the server no longer serves.
var errStaleCursor = errors.New("stale cursor: the catalog changed")

func (c cursor) encode(key []byte) string {
	var b []byte
	b = append(b, 1, c.kind)
	b = binary.AppendUvarint(b, uint64(c.offset))
	for _, s := range []string{c.snap, c.scope, c.last, c.owner} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	b = m.Sum(b)[:len(b)+macLength]
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// isOurs reports whether s has the shape of a cursor this package issues.
func isOurs(s string) bool { return strings.HasPrefix(s, cursorPrefix) }

func decodeCursor(key []byte, s string) (cursor, error) {
	if len(s) > maxCursorLength || !isOurs(s) {
		return cursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(cursorPrefix):])
	if err != nil || len(b) < 2+macLength {
		return cursor{}, errBadCursor
	}
	payload, mac := b[:len(b)-macLength], b[len(b)-macLength:]
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	if !hmac.Equal(m.Sum(nil)[:macLength], mac) {
		return cursor{}, errBadCursor
	}
	if payload[0] != 1 {
		return cursor{}, errBadCursor
	}
	c := cursor{kind: payload[1]}
	p := payload[2:]
	off, n := binary.Uvarint(p)
	if n <= 0 || off > 1<<31 {
		return cursor{}, errBadCursor
	}
	c.offset = int(off)
	p = p[n:]
	var strs [4]string
	for i := range strs {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return cursor{}, errBadCursor
		}
		strs[i] = string(p[n : n+int(l)])
		p = p[n+int(l):]
	}
	if len(p) != 0 {
		return cursor{}, errBadCursor
	}
	c.snap, c.scope, c.last, c.owner = strs[0], strs[1], strs[2], strs[3]
	return c, nil
}
