package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/wire"
)

// rawList sends any JSON as the skills/list result.
type rawList struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawList) MarshalJSON() ([]byte, error) { return r.raw, nil }

// TestVerifyCountsRefusedEntries is issue 27's fourth point: a skill the
// host refuses (here a URI over 2,048 bytes) made verify print "0 failed"
// and exit 1. A refused entry is a failure, named, and the summary agrees
// with the exit status.
func TestVerifyCountsRefusedEntries(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{{Label: "srv", Transport: longURIServer(t)}}, false)
	if exitCode(err) != 1 {
		t.Errorf("exit %d, want 1", exitCode(err))
	}
	for _, want := range []string{"FAIL srv: skill://p/", "refused", "longer than 2048 bytes", "0 skills verified, 1 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLsJSONCountsRefusedEntries: ls --json gives each origin's count of
// the entries it listed that the host refused, as verify counts them.
func TestLsJSONCountsRefusedEntries(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, flags(), []host.Origin{{Label: "srv", Transport: longURIServer(t)}}, true); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, errOut.String())
	}
	var got struct {
		Origins []map[string]any `json:"origins"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Origins) != 1 || got.Origins[0]["refused"] != 1.0 {
		t.Errorf("ls --json origins %v: want srv with refused 1\n%s", got.Origins, out.String())
	}
}

// longURIServer serves one skill whose URI is over the 2,048 bytes
// publishers and hosts accept: listed, and refused by the host.
func longURIServer(t *testing.T) mcp.Transport {
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(wire.ExtensionID, map[string]any{})
	s := mcp.NewServer(&mcp.Implementation{Name: "long"}, &mcp.ServerOptions{Capabilities: caps})
	long := `{"uri":"skill://` + strings.Repeat("p/", 1015) + `long/SKILL.md","frontmatter":{"name":"long","description":"d"},"resources":"dynamic"}`
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(context.Context, *mcp.ServerSession, *wire.ListSkillsParams) (*rawList, error) {
		return &rawList{raw: json.RawMessage(`{"resultType":"complete","ttlMs":0,"cacheScope":"public","skills":[` + long + `]}`)}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, st)
	return ct
}
