package skillserver

import (
	"encoding/json"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/wire"
)

// entryMeta is the _meta of a skill's entry: its signature (see
// signatureMeta) and, for a version served before review, its review
// state under wire.MetaReview; nil when there is neither, so such entries
// are encoded as before.
func entryMeta(sk *catalog.Skill) json.RawMessage {
	sig := signatureMeta(sk)
	if sk.Review == "" {
		return sig
	}
	m := map[string]json.RawMessage{}
	if sig != nil && json.Unmarshal(sig, &m) != nil {
		m = map[string]json.RawMessage{}
	}
	state, _ := json.Marshal(map[string]string{"state": sk.Review})
	m[wire.MetaReview] = state
	b, _ := json.Marshal(m)
	return b
}
