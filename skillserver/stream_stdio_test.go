package skillserver_test

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/skillserver"
)

// writeSizes records the largest single write through it.
type writeSizes struct {
	w   io.Writer
	mu  sync.Mutex
	max int
}

func (s *writeSizes) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.max = max(s.max, len(p))
	s.mu.Unlock()
	return s.w.Write(p)
}

func (s *writeSizes) largest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// TestStdioStreamsLargeReads: over stdio, the thin path writes a large
// file's resources/read answer as it encodes it, in pieces of at most a
// few chunks (as the HTTP thin path does), never the whole encoding at
// once; and the line is byte for byte go-sdk's, for text whose escapes
// and multi-byte runes fall anywhere and for binary content.
func TestStdioStreamsLargeReads(t *testing.T) {
	dir := t.TempDir()
	sk := filepath.Join(dir, "big")
	if err := os.MkdirAll(sk, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "\"", "\\", "\n", "\t", "\x01", "<&>", "é", "€", "😀", "\u2028", " "}
	var text strings.Builder
	for text.Len() < 1<<20 {
		text.WriteString(pieces[rng.IntN(len(pieces))])
	}
	bin := make([]byte, 1<<20+1)
	for i := range bin {
		bin[i] = byte(rng.IntN(256))
	}
	files := map[string]string{
		"SKILL.md": "---\nname: big\ndescription: Large files, streamed.\n---\nRead big.md.\n",
		"big.md":   text.String(),
		"big.bin":  string(bin),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(sk, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	type end struct {
		srv   *skillserver.Server
		in    io.Writer
		out   *bufio.Reader
		sizes *writeSizes
	}
	open := func(noFast bool) end {
		s, srv, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard, NoFastPath: noFast})
		if err != nil {
			t.Fatal(err)
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		sizes := &writeSizes{w: outW}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx, srv.Transport(&stdio.Transport{In: inR, Out: sizes}))
		}()
		t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); <-done })
		return end{srv: srv, in: inW, out: bufio.NewReaderSize(outR, 1<<20), sizes: sizes}
	}
	call := func(e end, line string) string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			io.WriteString(e.in, line+"\n")
			for {
				l, err := e.out.ReadString('\n')
				if err != nil || !strings.HasPrefix(l, `{"jsonrpc":"2.0","method"`) {
					got <- l
					return
				}
			}
		}()
		select {
		case l := <-got:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no response")
			return ""
		}
	}
	fast, slow := open(false), open(true)
	for _, e := range []end{fast, slow} {
		call(e, initLine(true))
		io.WriteString(e.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	}
	for _, uri := range []string{"skill://big/big.md", "skill://big/big.bin", "skill://big/SKILL.md"} {
		before := skillserver.FastServed(fast.srv)
		line := request(`"r"`, "resources/read", `{"uri":"`+uri+`"}`)
		f, s := call(fast, line), call(slow, line)
		if f != s {
			i := 0
			for i < min(len(f), len(s)) && f[i] == s[i] {
				i++
			}
			t.Errorf("%s: the thin path's answer (%d bytes) differs from go-sdk's (%d bytes) at byte %d", uri, len(f), len(s), i)
		}
		if skillserver.FastServed(fast.srv) == before {
			t.Errorf("%s: the thin path did not answer", uri)
		}
	}
	// 48 KiB of content encodes to at most 6 bytes a byte (\u2028), and
	// no write of the file's answer may hold more than that.
	if n := fast.sizes.largest(); n > 6*48<<10+4<<10 {
		t.Errorf("the thin path wrote %d bytes at once: the large answers were encoded whole, not streamed", n)
	}
}
