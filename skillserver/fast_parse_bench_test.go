package skillserver

import "testing"

// fastParseBodies are requests as real clients send them: a 2026-07-28
// read with its _meta, and a session's skills/list.
var fastParseBodies = []struct{ name, version, body string }{
	{"modern-read", ModernProtocolVersion, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"skill://pdf-processing/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"go-sdk","version":"1.8.0"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}}}`},
	{"session-list", "", `{"jsonrpc":"2.0","id":8,"method":"skills/list","params":{}}`},
}

// BenchmarkFastParse measures the thin path's reading of a request: the
// one parse of its body and the reading of its params.
func BenchmarkFastParse(b *testing.B) {
	for _, c := range fastParseBodies {
		body := []byte(c.body)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m message
				m.parse(body)
				if _, ok := readParams(&m, fastView{version: c.version}); !m.fastOK || !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
