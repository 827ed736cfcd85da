package skillserver

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
)

// TestStreamReadMatchesEncoding: a large file's answer, encoded as it is
// written in chunks, is byte for byte the answer encoded whole, for text
// whose escapes and multi-byte runes straddle the chunk boundaries and
// for binary content of every length modulo 3.
func TestStreamReadMatchesEncoding(t *testing.T) {
	srv := &Server{opts: Options{TTL: time.Minute, CacheScope: "public"}}
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "\"", "\\", "\n", "\t", "\x01", "<&>", "é", "€", "😀", "\u2028", "\u2029", "\x7f", " "}
	text := func(n int) []byte {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return []byte(b.String())
	}
	binary := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	cases := []struct {
		name string
		text bool
		data []byte
	}{
		{"text-small", true, text(100)},
		{"text-chunks", true, text(3*streamChunk + 17)},
		{"text-rune-at-cut", true, append(bytes.Repeat([]byte("a"), streamChunk-1), []byte("😀€é\"\n"+strings.Repeat("b", streamChunk))...)},
		{"binary-0mod3", false, binary(3 * streamChunk)},
		{"binary-1mod3", false, binary(2*streamChunk + 1)},
		{"binary-2mod3", false, binary(streamChunk + 2)},
		{"text-not-flagged", false, text(streamChunk + 5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uri := `skill://a/big "file".md`
			f := &catalog.File{URI: uri, Size: int64(len(c.data)), MIMEType: "text/markdown", Text: c.text}
			want, err := marshal(srv.readResult(uri, f, c.data), false)
			if err != nil {
				t.Fatal(err)
			}
			sr, err := srv.streamRead(uri, f, c.data)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.Write(sr.head)
			if err := sr.writeContent(&got); err != nil {
				t.Fatal(err)
			}
			got.Write(sr.tail)
			if !bytes.Equal(got.Bytes(), want) {
				i := 0
				for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
					i++
				}
				t.Fatalf("streamed answer differs from the whole encoding at byte %d of %d (streamed %d bytes)", i, len(want), got.Len())
			}
		})
	}
}
