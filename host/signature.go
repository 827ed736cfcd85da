package host

import (
	"encoding/json"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/wire"
)

// metaSignature returns the bundle under wire.MetaSignature in an entry's
// _meta object, nil when there is none. A _meta that is not an object
// carries no signature; whether that is acceptable is the trust policy's
// call, not the decoder's.
func metaSignature(meta json.RawMessage) []byte {
	if len(meta) == 0 {
		return nil
	}
	fields, err := jsonobj.Fields(meta)
	if err != nil {
		return nil
	}
	for _, f := range fields {
		if f.Key == wire.MetaSignature {
			return []byte(f.Value)
		}
	}
	return nil
}
