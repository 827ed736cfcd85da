package skillserver

import "testing"

// fastParseBodies are requests as real clients send them: a 2026-07-28
// read with its _meta, and a session's skills/list.
var fastParseBodies = []struct{ name, version, body string }{
	{"modern-read", ModernProtocolVersion, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"skill://pdf-processing/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"go-sdk","version":"1.8.0"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}}}`},
	{"session-list", "", `{"jsonrpc":"2.0","id":8,"method":"skills/list","params":{}}`},
}

// BenchmarkFastParse measures the thin path's reading of a request: the
// one parse of its body and the reading of its params, with the _meta
// of a 2026-07-28 request kept as the HTTP handler keeps it, and, for
// "-new-meta", read by go-sdk's readers each time (a client whose _meta
// never repeats).
func BenchmarkFastParse(b *testing.B) {
	for _, c := range fastParseBodies {
		body := []byte(c.body)
		for _, fresh := range []bool{false, true} {
			if fresh && c.version == "" {
				continue
			}
			name := c.name
			if fresh {
				name += "-new-meta"
			}
			var metas metaCache
			v := fastView{version: c.version, metas: &metas}
			if fresh {
				v.metas = nil
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var m message
					m.parse(body)
					if _, ok := readParams(&m, v); !m.fastOK || !ok {
						b.Fatal("declined")
					}
				}
			})
		}
	}
}
