//go:build !skillport_no_seed001

package skillserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/wire"
)

// FuzzReadReference feeds arbitrary skill names and references to the
// seed-001 skills/read_reference. It either returns a file of that very
// skill, byte for byte as published, or a well-formed error; a reference
// with a traversal segment never resolves.
func FuzzReadReference(f *testing.F) {
	for _, seed := range [][2]string{
		{"pdf-processing", "references/FORMS.md"}, {"pdf-processing", "FORMS"}, {"pdf-processing", "../git-workflow/SKILL.md"},
		{"pdf-processing", "references/../SKILL.md"}, {"pdf-processing", "/etc/passwd"}, {"refunds", "email"},
		{"pdf-processing", "references%2FFORMS.md"}, {"nope", "x"}, {"pdf-processing", "a\\b"}, {"pdf-processing", "SKILL.md\x00"},
	} {
		f.Add(seed[0], seed[1])
	}
	srv := fuzzServer(f)
	snap := srv.src.Snapshot()
	f.Fuzz(func(t *testing.T, name, ref string) {
		res, err := srv.readReference(context.Background(), &wire.ReadReferenceParams{Name: name, Reference: ref})
		if err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) || len(we.Message) > 2048 || (we.Data != nil && !json.Valid(we.Data)) {
				t.Fatalf("read_reference(%q, %q): malformed error %v", name, ref, err)
			}
			return
		}
		for seg := range strings.SplitSeq(ref, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("read_reference(%q, %q) resolved a traversal to %s", name, ref, res.Content.URI)
			}
		}
		file := snap.File(res.Content.URI)
		if file == nil {
			t.Fatalf("read_reference(%q, %q) returned unpublished %s", name, ref, res.Content.URI)
		}
		var owner bool
		for _, sk := range snap.Skills() {
			if sk.Name == name && strings.HasPrefix(file.URI, sk.Root+"/") {
				owner = true
			}
		}
		if !owner {
			t.Fatalf("read_reference(%q, %q) returned %s, which no skill named %q holds", name, ref, file.URI, name)
		}
		want, err := snap.ReadFile(context.Background(), file)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Content.Blob
		if res.Content.Text != nil {
			got = []byte(*res.Content.Text)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read_reference(%q, %q) served bytes that differ from %s", name, ref, file.URI)
		}
	})
}
