package host

import (
	"encoding/json"
	"fmt"
	"slices"

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

// trust applies Options.Trust to entries received from a server and
// returns those it keeps; the others are refused with a diagnostic that
// names the skill and the origin.
func (o *originState) trust(entries []*Entry) []*Entry {
	kept, _ := o.trustErr(entries)
	return kept
}

// trustErr is trust, also returning the last refusal's message.
func (o *originState) trustErr(entries []*Entry) ([]*Entry, error) {
	check := o.h.opts.Trust
	if check == nil || len(entries) == 0 {
		return entries, nil
	}
	errs := check(o.cfg, entries)
	kept := entries[:0:0]
	var last error
	for i, e := range entries {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		if err == nil {
			kept = append(kept, e)
			continue
		}
		msg := fmt.Sprintf("skill %s from origin %s refused: %v", e.URI, o.cfg.Label, err)
		ee := &EntryError{Origin: o.cfg.Label, URI: e.URI, Err: ErrUntrusted, Msg: msg}
		last = ee
		o.refuse(Diagnostic{Origin: o.cfg.Label, URI: e.URI, Severity: Error, Err: ee, Message: msg})
	}
	return slices.Clip(kept), last
}
