package skillserver

import (
	"encoding/json"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/wire"
)

// signatureMeta is the _meta of a skill's entry: its signature bundle
// under wire.MetaSignature, or nil (no _meta at all) when it has none, so
// unsigned entries are encoded as before.
func signatureMeta(sk *catalog.Skill) json.RawMessage {
	if len(sk.Signature) == 0 && len(sk.ScanFindings) == 0 {
		return nil
	}
	m := map[string]json.RawMessage{}
	if len(sk.Signature) > 0 {
		m[wire.MetaSignature] = sk.Signature
	}
	if len(sk.ScanFindings) > 0 {
		// A registry's scan findings (docs/registry-scanning.md).
		m[wire.MetaScanFindings] = sk.ScanFindings
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil // not JSON: the catalog only keeps valid bundles
	}
	return b
}

// EntryMeta is the _meta object of sk's skills/list and skills/get
// entries (its signature bundle, a registry's scan findings and review
// state), nil when it has none. The web catalog's discovery document
// carries the same object in the skill's entry, so that a host reading a
// site without an MCP endpoint gets the bundle an MCP host gets.
func EntryMeta(sk *catalog.Skill) json.RawMessage { return entryMeta(sk) }
