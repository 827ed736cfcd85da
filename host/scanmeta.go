package host

import (
	"encoding/json"

	"github.com/skillport/skillport/wire"
)

// metaScanFindings returns the registry's scan findings under
// wire.MetaScanFindings in an entry's _meta, verbatim; nil when there are
// none or they are not a JSON array (a server's malformed _meta is no
// reason to refuse a skill, and no finding either).
func metaScanFindings(meta json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return nil
	}
	if v := m[wire.MetaScanFindings]; len(v) > 0 && v[0] == '[' {
		return v
	}
	return nil
}
