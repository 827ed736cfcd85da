package host

import (
	"encoding/json"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/wire"
)

// metaScanFindings returns the registry's scan findings under
// wire.MetaScanFindings in an entry's _meta, verbatim; nil when there are
// none or they are not a JSON array (a server's malformed _meta is no
// reason to refuse a skill, and no finding either).
func metaScanFindings(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return nil
	}
	fields, err := jsonobj.Fields(meta)
	if err != nil {
		return nil
	}
	for _, f := range fields {
		if f.Key == wire.MetaScanFindings && len(f.Value) > 0 && f.Value[0] == '[' {
			return f.Value
		}
	}
	return nil
}
