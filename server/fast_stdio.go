package server

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/wire"
)

// fastStdio gives a stdio transport the thin read path, when the server
// has it.
func (srv *Server) fastStdio(t mcp.Transport) mcp.Transport {
	st, ok := t.(*stdio.Transport)
	if !ok || st.Answerer != nil || !srv.thin() {
		return t
	}
	c := *st
	c.Answerer = srv.stdioAnswerer
	return &c
}

// stdioAnswerer returns the thin read path of a stdio connection whose
// initialize request had params init: it answers a request line with the
// response go-sdk would write, or returns nil to hand the line to go-sdk.
func (srv *Server) stdioAnswerer(initRaw json.RawMessage) func([]byte) []byte {
	declared, ok := initDeclared(initRaw)
	if !ok {
		return nil
	}
	// What [declaredExtension] reads of go-sdk's initialize params: the
	// thin path decides the entry shape through it as go-sdk's path does.
	init := &mcp.InitializeParams{Capabilities: &mcp.ClientCapabilities{}}
	if declared {
		init.Capabilities.Extensions = map[string]any{wire.ExtensionID: map[string]any{}}
	}
	return func(line []byte) []byte {
		req, ok := parseFast(line)
		if !ok {
			return nil
		}
		if req.method == wire.MethodListSkills && !declared && srv.prof.legacyCapability() {
			// Such a client is a legacy one, which the connection's
			// wrapper must see list (profile_notify.go).
			return nil
		}
		v := fastView{init: init}
		p, ok := readParams(req, v)
		if !ok {
			return nil
		}
		res, ok := srv.fastResult(context.Background(), req.method, p, v)
		if !ok {
			return nil
		}
		return fastMessage("", req.id, res, "\n")
	}
}

// initDeclared reports whether initialize params declare the Skills
// Extension (capabilities.extensions), as go-sdk reads them; ok is false
// for params it cannot be sure of.
func initDeclared(init json.RawMessage) (declared, ok bool) {
	member := func(obj []byte, key string) ([]byte, bool) {
		fs, err := jsonobj.Fields(obj)
		if err != nil {
			return nil, false
		}
		for _, f := range fs {
			if f.Key == key {
				return f.Value, true
			}
		}
		return nil, true
	}
	caps, ok := member(init, "capabilities")
	if !ok || caps == nil || string(caps) == "null" {
		return false, ok
	}
	ext, ok := member(caps, "extensions")
	if !ok || ext == nil || string(ext) == "null" {
		return false, ok
	}
	fs, err := jsonobj.Fields(ext)
	if err != nil {
		return false, false
	}
	for _, f := range fs {
		if f.Key == wire.ExtensionID {
			return true, true
		}
	}
	return false, true
}
