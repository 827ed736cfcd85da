//go:build !skillport_no_index && !skillport_no_sep2076 && !skillport_no_seed001

package skillserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/peers"
)

type legacyStep struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// TestTypeScriptLegacyClient drives `skillport serve` with a client written
// with the official TypeScript SDK that speaks only the legacy designs
// (testdata/ts-legacy-client.mjs), over stdio and Streamable HTTP, with and
// without --allow-scripts.
func TestTypeScriptLegacyClient(t *testing.T) {
	dir := profileTree(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "ts-legacy-client.mjs"))
	withScripts := serveHTTP(t, dir, "--allow-scripts")
	plain := serveHTTP(t, dir)
	cases := []struct {
		name    string
		target  []string
		scripts bool
	}{
		{"http-allow-scripts", []string{"--url", withScripts.URL}, true},
		{"http-default", []string{"--url", plain.URL}, false},
		{"stdio-default", []string{"--", skillportBin, "serve", dir}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{peers.Node(t), script, peers.Dir(t)}, tc.target...)
			res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: peers.Env(t), Timeout: 90 * time.Second})
			var rep struct {
				Steps map[string]legacyStep `json:"steps"`
				Fatal string                `json:"fatal"`
			}
			if jerr := json.Unmarshal(res.Stdout, &rep); jerr != nil || err != nil || rep.Fatal != "" {
				t.Fatalf("ts-legacy-client: %v %v %s\n%s\n%s", jerr, err, rep.Fatal, res.Stdout, res.Stderr)
			}
			ok := func(name string, v any) {
				t.Helper()
				s := rep.Steps[name]
				if s.Error != nil {
					t.Fatalf("%s: error %d %s", name, s.Error.Code, s.Error.Message)
				}
				if err := json.Unmarshal(s.Result, v); err != nil {
					t.Fatalf("%s: %v: %s", name, err, s.Result)
				}
			}
			fails := func(name string, code int, dataKey string) {
				t.Helper()
				s := rep.Steps[name]
				if s.Error == nil || s.Error.Code != code || (dataKey != "" && !strings.Contains(string(s.Error.Data), `"`+dataKey+`"`)) {
					t.Errorf("%s: %+v %s, want error %d with data.%s", name, s.Error, s.Result, code, dataKey)
				}
			}
			var list struct {
				Skills []struct{ Name, Description, Title string }
			}
			ok("list", &list)
			if len(list.Skills) != 3 || list.Skills[0].Name != "create-presentation" || list.Skills[1].Title != "PDF Form Filling" {
				t.Errorf("skills/list: %+v", list)
			}
			var get struct {
				Instructions string
				Files        []struct{ URI string }
			}
			ok("get", &get)
			if !strings.HasPrefix(get.Instructions, "Use read_pdf") || len(get.Files) != 1 || get.Files[0].URI != "skill://pdf-form-filling/forms.md" {
				t.Errorf("skills/get by name: %+v", get)
			}
			fails("getUnknown", -32602, "name")
			fails("getBoth", -32602, "uri")
			var read struct {
				Skill struct {
					Name    string
					Scripts []struct{ Path string }
				}
			}
			ok("read", &read)
			if read.Skill.Name != "create-presentation" || len(read.Skill.Scripts) != 1 || read.Skill.Scripts[0].Path != "scripts/create_pptx.py" {
				t.Errorf("skills/read: %+v", read)
			}
			fails("readUnknown", -32602, "name")
			var ref struct {
				Content struct{ URI, Text string }
			}
			ok("reference", &ref)
			if ref.Content.URI != "skill://create-presentation/references/templates.md" || !strings.HasPrefix(ref.Content.Text, "# Slide Templates") {
				t.Errorf("skills/read_reference: %+v", ref)
			}
			fails("referenceTraversal", -32602, "reference")
			var index struct {
				Contents []struct{ URI, MIMEType, Text string }
			}
			ok("index", &index)
			if len(index.Contents) != 1 || !strings.Contains(index.Contents[0].Text, `"type":"skill-md"`) {
				t.Errorf("skill://index.json: %+v", index)
			}
			if !tc.scripts {
				fails("execute", -32003, "reason")
				return
			}
			var exec struct {
				IsError bool
				Content []struct {
					Type     string
					Resource struct{ URI, Name, Blob string }
				}
			}
			ok("execute", &exec)
			if exec.IsError || len(exec.Content) != 1 || exec.Content[0].Resource.Name != "q4-sales-review.pptx" || exec.Content[0].Resource.Blob == "" {
				t.Errorf("skills/execute: %+v", exec)
			}
		})
	}
}
