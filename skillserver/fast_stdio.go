package skillserver

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/stdio"
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
// initialize request had params initRaw: it answers a request line with the
// response go-sdk would write, or returns nil to hand the line to go-sdk.
func (srv *Server) stdioAnswerer(initRaw json.RawMessage) func([]byte) io.WriterTo {
	init, ok := readInit(initRaw)
	if !ok {
		return nil
	}
	declared := declaredExtension(init, nil)
	return func(line []byte) io.WriterTo {
		var m message
		if m.parse(line); !m.fastOK {
			return nil
		}
		req := m.req
		if srv.compat != nil && srv.compat.watches(req.method, declared) {
			// The compatibility profiles must see this request on the
			// connection (hook.go).
			return nil
		}
		v := fastView{init: init}
		p, ok := readParams(&m, v)
		if !ok {
			return nil
		}
		ctx := context.Background()
		if req.method == "resources/read" && srv.largeFile(ctx, p.uri) != nil {
			// Written as it is encoded, as over HTTP: the answer holds the
			// file once, not the file, its encoding and the message.
			if m, ok := srv.largeReadMessage(ctx, "", req.id, p.uri, v, "\n"); ok {
				return m
			}
			return nil
		}
		res, ok := srv.fastResult(ctx, req.method, p, v)
		if !ok {
			return nil
		}
		return stdio.Line(fastMessage("", req.id, res, "\n"))
	}
}

// readInit reads initialize params as go-sdk does, for
// [declaredExtension]: the client's capabilities (nil when absent or
// null) and protocol version; ok is false for params it cannot be sure
// go-sdk reads alike.
func readInit(raw json.RawMessage) (init *mcp.InitializeParams, ok bool) {
	fs, err := jsonobj.Fields(raw)
	if err != nil {
		return nil, false
	}
	init = &mcp.InitializeParams{}
	for _, f := range fs {
		switch f.Key {
		case "capabilities":
			if string(f.Value) == "null" {
				continue
			}
			if init.Capabilities, ok = readCapabilities(f.Value); !ok {
				return nil, false
			}
		case "protocolVersion":
			if !strictDecode(f.Value, &init.ProtocolVersion) {
				return nil, false
			}
		case "clientInfo":
			if !strictDecode(f.Value, &init.ClientInfo) {
				return nil, false
			}
		case "_meta":
			if !strictDecode(f.Value, &init.Meta) {
				return nil, false
			}
		default:
			for _, k := range []string{"capabilities", "protocolVersion", "clientInfo", "_meta"} {
				if strings.EqualFold(f.Key, k) {
					return nil, false // go-sdk's decoder matches names exactly
				}
			}
		}
	}
	return init, true
}
