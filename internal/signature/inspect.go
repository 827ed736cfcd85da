package signature

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// Inspector is Inspect that decodes each distinct bundle once: a host
// without a trust policy inspects every signed skill of a listing again
// each time it lists the server (on every change notification), and the
// bundles of the skills that did not change are the same bytes. Decoding
// (protojson) is most of an inspection; matching against the set is
// redone each time, since the set is what may have changed. The zero
// Inspector is ready to use and safe for concurrent use.
type Inspector struct {
	mu      sync.Mutex
	seed    maphash.Seed
	decoded map[uint64]*opened
}

// opened is a decoded bundle, kept with its bytes: a hash match is
// confirmed byte for byte before the decoded form is reused.
type opened struct {
	raw, payload []byte
	id           Identity
}

// maxInspected bounds Inspector.decoded (a bundle and its statement,
// about 2 KiB each for a small skill); when full it starts over.
const maxInspected = 4096

// Inspect is the package's Inspect, remembering the decoded bundle.
func (in *Inspector) Inspect(set *Set, raw []byte) (Identity, error) {
	in.mu.Lock()
	if in.decoded == nil {
		in.seed = maphash.MakeSeed()
		in.decoded = map[uint64]*opened{}
	}
	key := maphash.Bytes(in.seed, raw)
	o := in.decoded[key]
	in.mu.Unlock()
	if o == nil || !bytes.Equal(o.raw, raw) {
		_, payload, id, err := open(raw)
		if err != nil {
			return id, err
		}
		// raw is cloned: the caller may reuse its buffer.
		o = &opened{raw: bytes.Clone(raw), payload: payload, id: id}
		in.mu.Lock()
		if len(in.decoded) >= maxInspected {
			in.decoded = map[uint64]*opened{}
		}
		in.decoded[key] = o
		in.mu.Unlock()
	}
	_, err := match(set, o.payload)
	return o.id, err
}
