package skillserver

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// entryCache holds the encoded SEP-2640 entry of each skill of one
// snapshot. An entry is a pure function of the (immutable) skill, and
// skills/get and skills/list send the same entries again and again, so
// each is encoded once and its bytes are sent many times. The cache holds
// one encoding per skill of the current snapshot (about the size of the
// entry's JSON); it is dropped when the snapshot changes.
type entryCache struct {
	snap string
	m    sync.Map // *catalog.Skill -> []byte
}

type entriesCache = atomic.Pointer[entryCache]

// encodedEntry returns the JSON of entry(sk), sk being a skill of snap.
// skills/get results have always been encoded with json.Marshal (HTML
// characters escaped), skills/list results by go-sdk, which leaves them
// as they are: escapeHTML chooses. Only the unescaped encoding is kept;
// the escaped one differs only where <, > or & occur, all inside strings.
func (srv *Server) encodedEntry(snap published.Snapshot, sk *catalog.Skill, escapeHTML bool) ([]byte, error) {
	c := srv.entries.Load()
	if c == nil || c.snap != snap.ID() {
		c = &entryCache{snap: snap.ID()}
		srv.entries.Store(c)
	}
	var b []byte
	if v, ok := c.m.Load(sk); ok {
		b = v.([]byte)
	} else {
		var err error
		if b, err = marshal(entry(sk), false); err != nil {
			return nil, err
		}
		b = bytes.Clone(b) // kept for the snapshot's life: no spare capacity
		c.m.Store(sk, b)
	}
	if escapeHTML && bytes.ContainsAny(b, "<>&") {
		return escapeHTMLChars(b), nil
	}
	return b, nil
}

// escapeHTMLChars escapes <, > and & as json.Marshal does; in JSON they
// can only occur inside strings.
func escapeHTMLChars(b []byte) []byte {
	out := make([]byte, 0, len(b)+32)
	for _, c := range b {
		switch c {
		case '<':
			out = append(out, `\u003c`...)
		case '>':
			out = append(out, `\u003e`...)
		case '&':
			out = append(out, `\u0026`...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// marshal is json.Marshal, optionally without escaping <, > and &, as
// go-sdk encodes the results it sends.
func marshal(v any, escapeHTML bool) ([]byte, error) {
	if escapeHTML {
		return json.Marshal(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// appendMeta writes the _meta member go-sdk may have set on a result, with
// its comma, as encoding/json writes an embedded mcp.ResultBase.
func appendMeta(buf *bytes.Buffer, meta mcp.Meta, escapeHTML bool) error {
	if len(meta) == 0 {
		return nil
	}
	b, err := marshal(meta, escapeHTML)
	if err != nil {
		return err
	}
	buf.WriteString(`"_meta":`)
	buf.Write(b)
	buf.WriteByte(',')
	return nil
}

// appendString writes s as encoding/json does.
func appendString(buf *bytes.Buffer, s string, escapeHTML bool) {
	b, _ := marshal(s, escapeHTML)
	buf.Write(b)
}

// encodeGet writes res, whose entry is encoded as skill, exactly as
// json.Marshal(res) with res.ResultBase = base would (as getResponse always
// has).
func encodeGet(base mcp.ResultBase, res *wire.GetSkillResult, skill []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(skill) + 128)
	buf.WriteByte('{')
	if err := appendMeta(&buf, base.Meta, true); err != nil {
		return nil, err
	}
	buf.WriteString(`"resultType":`)
	appendString(&buf, res.ResultType, true)
	buf.WriteString(`,"skill":`)
	buf.Write(skill)
	buf.WriteString(`,"ttlMs":`)
	buf.WriteString(strconv.FormatInt(res.TTLMs, 10))
	buf.WriteString(`,"cacheScope":`)
	appendString(&buf, res.CacheScope, true)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// listResponse is a skills/list result, either to be encoded or, for a
// client that declared the extension, encoded already ([Server.slimPage]).
type listResponse struct {
	mcp.ResultBase
	res     *wire.ListResult
	encoded [][]byte // when set, the JSON of res.Skills
	page    []byte   // when set, the JSON of the whole result, without _meta
}

// MarshalJSON writes the result exactly as go-sdk would encode res (HTML
// characters left as they are), with the _meta go-sdk may have set.
func (r *listResponse) MarshalJSON() ([]byte, error) {
	if r.page != nil {
		if len(r.Meta) == 0 {
			return r.page, nil
		}
		var buf bytes.Buffer
		buf.Grow(len(r.page) + 256)
		buf.WriteByte('{')
		if err := appendMeta(&buf, r.Meta, false); err != nil {
			return nil, err
		}
		buf.Write(r.page[1:])
		return buf.Bytes(), nil
	}
	if r.encoded == nil {
		r.res.ResultBase = r.ResultBase
		return marshal(r.res, false)
	}
	n := 128
	for _, e := range r.encoded {
		n += len(e) + 1
	}
	var buf bytes.Buffer
	buf.Grow(n)
	buf.WriteByte('{')
	if err := appendMeta(&buf, r.Meta, false); err != nil {
		return nil, err
	}
	if r.res.ResultType != "" {
		buf.WriteString(`"resultType":`)
		appendString(&buf, r.res.ResultType, false)
		buf.WriteByte(',')
	}
	buf.WriteString(`"skills":[`)
	for i, e := range r.encoded {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(e)
	}
	buf.WriteByte(']')
	if r.res.NextCursor != "" {
		buf.WriteString(`,"nextCursor":`)
		appendString(&buf, r.res.NextCursor, false)
	}
	if r.res.TTLMs != nil {
		buf.WriteString(`,"ttlMs":`)
		buf.WriteString(strconv.FormatInt(*r.res.TTLMs, 10))
	}
	if r.res.CacheScope != "" {
		buf.WriteString(`,"cacheScope":`)
		appendString(&buf, r.res.CacheScope, false)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// maxPageCache bounds the bytes of skills/list pages kept per snapshot:
// some 25 pages of 100 entries, far more than the first pages every host
// reads; a page past it is encoded on each request, from cached entries.
const maxPageCache = 4 << 20

// pageCache holds the encoded skills/list pages of pure SEP-2640 entries
// of one snapshot. A page is a pure function of the snapshot, its first
// skill and the caller its nextCursor is bound to, and the first page is
// what every host asks for first: it is encoded once and sent many times.
type pageCache struct {
	snap string
	mu   sync.Mutex
	m    map[pageKey][]byte
	size int
}

// pageKey names a page of a snapshot: its caller (cursorOwner) and start.
type pageKey struct {
	owner string
	start int
}

// slimPage returns the JSON of the skills/list result of snap, pure
// SEP-2640 entries, for the page cur asks for, without _meta.
func (srv *Server) slimPage(snap published.Snapshot, cur string) ([]byte, error) {
	skills := snap.Skills()
	start, err := srv.page(cur, kindSkills, "", snap, len(skills))
	if err != nil {
		return nil, badCursor(wire.MethodListSkills, "", err)
	}
	c := srv.pages.Load()
	if c == nil || c.snap != snap.ID() {
		c = &pageCache{snap: snap.ID(), m: map[pageKey][]byte{}}
		srv.pages.Store(c)
	}
	key := pageKey{owner: cursorOwner(snap), start: start}
	c.mu.Lock()
	b, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	end := srv.pageEnd(skills, start)
	ttl := srv.ttlMs()
	res := &wire.ListResult{ResultType: wire.ResultComplete, TTLMs: &ttl, CacheScope: srv.opts.CacheScope,
		NextCursor: srv.nextSkillsCursor(snap, skills, end)}
	enc := make([][]byte, end-start)
	for i, sk := range skills[start:end] {
		if enc[i], err = srv.encodedEntry(snap, sk, false); err != nil {
			return nil, err
		}
	}
	if b, err = (&listResponse{res: res, encoded: enc}).MarshalJSON(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, ok := c.m[key]; !ok && c.size+len(b) <= maxPageCache {
		c.m[key] = b
		c.size += len(b)
	}
	c.mu.Unlock()
	return b, nil
}
