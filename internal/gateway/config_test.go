package gateway_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/gateway"
)

func TestLoadConfig(t *testing.T) {
	t.Setenv("GATEWAY_TEST_TOKEN", "s3cret")
	file := filepath.Join("testdata", "gateway.json")
	cfg, err := gateway.LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, o := range cfg.Origins {
		labels = append(labels, o.Label)
	}
	if got := strings.Join(labels, " "); got != "team-skills docs local none" && got != "docs team-skills local none" {
		t.Errorf("origins %q", got)
	}
	for _, o := range cfg.Origins {
		switch o.Label {
		case "team-skills":
			if o.Headers["Authorization"] != "Bearer s3cret" {
				t.Errorf("header not expanded: %q", o.Headers["Authorization"])
			}
		case "local":
			if o.Dir != filepath.Join("testdata", "skills") {
				t.Errorf("skill dir %q not resolved against the file's directory", o.Dir)
			}
		}
	}
	if f := cfg.Filters["docs"]; f == nil || !f.Admits("pdf-processing", "pdf-processing", "pdf-processing") || f.Admits("code-review", "code-review", "code-review") || !f.Admits("refunds", "acme/billing/refunds", "refunds") {
		t.Errorf("docs filter %+v", f)
	}
	if f := cfg.Filters["none"]; f == nil || f.Include == nil || f.Admits("x", "x", "x") {
		t.Errorf("an empty include list must admit nothing: %+v", f)
	}
	if cfg.Filters["local"] != nil {
		t.Errorf("local has no lists, so no filter: %+v", cfg.Filters["local"])
	}
	if cfg.TokenBudget != 500 || !cfg.IndexBodies || cfg.CallTimeout != 2500*time.Millisecond || cfg.Cache || cfg.Approvals.ElicitEnabled() {
		t.Errorf("settings %+v", cfg)
	}
	if *cfg.Approvals.Store != filepath.Join("testdata", "approvals.json") || len(cfg.Approvals.Allow) != 1 || len(cfg.Approvals.Deny) != 1 {
		t.Errorf("approvals %+v", cfg.Approvals)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, json, want string
	}{
		{"not json", `{"mcpServers": `, "/etc/gw.json:1:16: parsing value: unexpected EOF"},
		{"array", `[]`, "not a JSON object"},
		{"unknown field", `{"mcpServers": {"a": {"command": "x"}}, "tokenbudget": 3}`, `tokenbudget: unknown field`},
		{"no origins", `{}`, "no origins"},
		{"both transports", `{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, "both command and url"},
		{"bad pattern", `{"mcpServers": {"a": {"command": "x", "include": ["[a"]}}}`, `mcpServers["a"]: include[0]`},
		{"include not a list", `{"mcpServers": {"a": {"command": "x", "include": "pdf"}}}`, `mcpServers["a"]`},
		{"duplicate key", `{"mcpServers": {"a": {"command": "x", "include": [], "include": ["b"]}}}`, `"include" appears twice`},
		{"rule without skill", `{"mcpServers": {"a": {"command": "x"}}, "approvals": {"allow": [{"origin": "a"}]}}`, "approvals.allow[0]"},
		{"rule for unknown origin", `{"mcpServers": {"a": {"command": "x"}}, "approvals": {"allow": [{"origin": "b", "skill": "*"}]}}`, `approvals.allow[0].origin: "b" is not a configured origin`},
		{"budget too small", `{"mcpServers": {"a": {"command": "x"}}, "tokenBudget": 5}`, "tokenBudget: must be an integer >= 100"},
		{"flag not bool", `{"mcpServers": {"a": {"command": "x"}}, "indexBodies": "yes"}`, "indexBodies: must be true or false"},
		{"bad dir label", `{"skillDirs": [{"label": "Bad Label", "path": "x"}]}`, "skillDirs[0]"},
		{"unset variable in store", `{"mcpServers": {"a": {"command": "x"}}, "approvals": {"store": "${SKILLPORT_NOPE_UNSET}/a.json"}}`, "approvals.store: ${SKILLPORT_NOPE_UNSET} is not set"},
		{"unset variable in a server", `{"mcpServers": {"a": {"command": "x", "args": ["${SKILLPORT_NOPE_UNSET}"]}}}`, `server "a": args[0]: ${SKILLPORT_NOPE_UNSET} is not set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseConfig("/etc/gw.json", []byte(c.json))
			if err == nil || !errors.Is(err, gateway.ErrConfig) || !strings.Contains(err.Error(), "/etc/gw.json") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming /etc/gw.json and containing %q", err, c.want)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "include": ["p*"], "exclude": []}}, "skillDirs": [{"label": "l", "path": "d"}]}`))
	f.Add([]byte(`{"servers": {"A B": {"url": "http://h/mcp"}}, "approvals": {"allow": [{"origin": "*", "skill": "*"}]}, "tokenBudget": 100}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "disabled": true}, "b": {"url": "http://x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := gateway.ParseConfig("f.json", data)
		if err != nil {
			if !errors.Is(err, gateway.ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		if len(cfg.Origins) == 0 {
			t.Fatal("a configuration without origins was accepted")
		}
		for label := range cfg.Filters {
			found := false
			for _, o := range cfg.Origins {
				found = found || o.Label == label
			}
			if !found {
				t.Fatalf("filter for %q, which is no origin", label)
			}
		}
	})
}

func TestParseConfigJSONC(t *testing.T) {
	src := "// gateway.json\n{\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"skillport\", \"args\": [\"serve\", \"./skills\",], \"include\": [\"pdf-*\",],},\n  },\n  /* approvals */\n  \"tokenBudget\": 4000,\n}\n"
	cfg, err := gateway.ParseConfig("gateway.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Origins) != 1 || cfg.TokenBudget != 4000 || cfg.Filters["docs"] == nil {
		t.Errorf("%+v", cfg)
	}
	_, err = gateway.ParseConfig("gateway.json", []byte("{\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"x\" \"args\": []}}}"))
	if err == nil || !strings.Contains(err.Error(), "gateway.json:3:") {
		t.Errorf("syntax error without file:line:column: %v", err)
	}
	_, err = gateway.ParseConfig("gateway.json", []byte("{\n  \"mcpServers\": {\n    \"docs\": {\"comand\": \"x\"}}}"))
	if err == nil || !strings.Contains(err.Error(), `gateway.json:3:14: mcpServers["docs"]: unknown key "comand"; did you mean "command"?`) {
		t.Errorf("typo: %v", err)
	}
}

// TestParseConfigTakesAHostsFile: a real claude_desktop_config.json, with
// its own top-level keys, is read as ls --config reads it; its keys are
// noted as ignored. A gateway.json's unknown key is still an error.
func TestParseConfigTakesAHostsFile(t *testing.T) {
	cfg, err := gateway.ParseConfig("claude_desktop_config.json", []byte(`{"globalShortcut": "Ctrl+Space", "mcpServers": {"a": {"command": "x"}}}`))
	if err != nil || len(cfg.Origins) != 1 || !strings.Contains(strings.Join(cfg.Notes, "\n"), "ignoring globalShortcut: not a gateway setting") {
		t.Fatalf("ParseConfig = %+v, %v", cfg, err)
	}
	_, err = gateway.ParseConfig("gateway.json", []byte(`{"tokenBudget": 10, "globalShortcut": "x", "mcpServers": {}}`))
	if err == nil || !strings.Contains(err.Error(), "globalShortcut: unknown field") || strings.Contains(err.Error(), "indexBodies") {
		t.Errorf("gateway.json with an unknown field: %v", err)
	}
}
