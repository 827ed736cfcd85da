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
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(wire.ExtensionID, map[string]any{})
	s := mcp.NewServer(&mcp.Implementation{Name: "long"}, &mcp.ServerOptions{Capabilities: caps})
	long := `{"uri":"skill://` + strings.Repeat("p/", 1015) + `long/SKILL.md","frontmatter":{"name":"long","description":"d"},"resources":"dynamic"}`
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(context.Context, *mcp.ServerSession, *wire.ListSkillsParams) (*rawList, error) {
		return &rawList{raw: json.RawMessage(`{"resultType":"complete","ttlMs":0,"cacheScope":"public","skills":[` + long + `]}`)}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, st)

	var out, errOut bytes.Buffer
	err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{{Label: "srv", Transport: ct}}, false)
	if exitCode(err) != 1 {
		t.Errorf("exit %d, want 1", exitCode(err))
	}
	for _, want := range []string{"FAIL srv: skill://p/", "refused", "longer than 2048 bytes", "0 skills verified, 1 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}
