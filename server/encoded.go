package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
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
func (srv *Server) encodedEntry(snap Snapshot, sk *catalog.Skill, escapeHTML bool) ([]byte, error) {
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

// listResponse is a skills/list result whose entries may be encoded
// already: pure SEP-2640 entries, sent to a client that declared the
// extension, are the cached encodings of [Server.encodedEntry].
type listResponse struct {
	mcp.ResultBase
	res     *wire.ListResult
	encoded [][]byte // when set, the JSON of res.Skills
}

// MarshalJSON writes the result exactly as go-sdk would encode res (HTML
// characters left as they are), with the _meta go-sdk may have set.
func (r *listResponse) MarshalJSON() ([]byte, error) {
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
