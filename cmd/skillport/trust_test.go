package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/skilltest"
)

// signedTree writes three skills: pdf signed by the acme key, docx signed
// by the other key, extra unsigned. It returns the tree and the key files.
func signedTree(t *testing.T) (dir, acmePub, otherPub, acmePriv string) {
	t.Helper()
	keys := t.TempDir()
	acmePriv, acmePub = keyFiles(t, keys, "acme")
	otherPriv, otherPub := keyFiles(t, keys, "other")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	dir = skilltest.WriteTree(t, map[string]string{
		"pdf/SKILL.md":        "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"pdf/scripts/run.sh":  "echo pdf\n",
		"docx/SKILL.md":       "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
		"extra/SKILL.md":      "---\nname: extra\ndescription: Added later\n---\nBody.\n",
		"extra/notes/more.md": "more\n",
	})
	if err := runSign(&bytes.Buffer{}, otherPriv, dir); err != nil {
		t.Fatal(err)
	}
	docx, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(sigfile.Path("docx"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := runSign(&bytes.Buffer{}, acmePriv, dir); err != nil {
		t.Fatal(err)
	}
	skilltest.WriteFile(t, filepath.Join(dir, filepath.FromSlash(sigfile.Path("docx"))), string(docx))
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(sigfile.Path("extra")))); err != nil {
		t.Fatal(err)
	}
	return dir, acmePub, otherPub, acmePriv
}

// TestTrustPolicyEndToEnd: a real skillport serve process carries the
// bundles; every host command applies the same per-origin policy, and
// refuses the skill signed by another key and the unsigned one, naming
// the skill, the origin and the reason.
func TestTrustPolicyEndToEnd(t *testing.T) {
	bin := skilltest.Binary(t)
	fakeHome(t)
	project := t.TempDir()
	t.Chdir(project)
	dir, acmePub, otherPub, _ := signedTree(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := startServeProcess(t, bin, addr, dir)
	url := "http://" + addr + "/mcp"

	policy := filepath.Join(filepath.Dir(acmePub), "policy.json")
	skilltest.WriteFile(t, policy, `{"origins": {"acme": {"keys": ["acme.pub"]}}}`)

	refusedDocx := "skill://docx/SKILL.md from origin acme refused: signature refused: signed by key "
	refusedExtra := `skill://extra/SKILL.md from origin acme refused: unsigned: the server sent no _meta "io.skillport/signature" signature, and the trust policy requires one`
	runCases(t, []cliCase{
		{"verify", []string{"verify", "--trust-policy", policy, "--label", "acme", url}, 1,
			[]string{"ok   acme:pdf", "signature verified: signed by key ", "1 skill verified, 2 failed", "which is not a trusted key"}, []string{refusedDocx, refusedExtra}, nil},
		{"ls", []string{"ls", "--trust-policy", policy, "--label", "acme", url}, 0,
			[]string{"pdf"}, []string{refusedDocx, refusedExtra}, []string{"Read DOCX"}},
		{"ls --json", []string{"ls", "--json", "--trust-policy", policy, "--label", "acme", url}, 0,
			[]string{`"signer": "key:`, `"signature": "signature verified: signed by key `}, nil, nil},
		{"pull", []string{"pull", "--to", filepath.Join(project, "pulled"), "--trust-policy", policy, "--label", "acme", url}, 1,
			[]string{"pdf -> "}, []string{refusedDocx, refusedExtra}, nil},
		{"load refused", []string{"load", "docx", url, "--label", "acme", "--trust-policy", policy, "--yes"}, 1,
			nil, []string{refusedDocx}, []string{"Body."}},
		{"load trusted", []string{"load", "pdf", url, "--label", "acme", "--trust-policy", policy, "--yes"}, 0,
			[]string{"Run scripts/run.sh."}, nil, nil},
		{"origin outside the policy", []string{"verify", "--trust-policy", policy, "--label", "other", url}, 1,
			[]string{"the trust policy names no signer for origin other"}, nil, nil},
		{"--trusted-key", []string{"verify", "--trusted-key", acmePub, url}, 1,
			[]string{"ok   server:pdf", "1 skill verified, 2 failed"}, nil, nil},
		{"no policy: verified when present and reported", []string{"verify", url}, 0,
			[]string{"ok   server:pdf", "signed by key ", "not checked", "ok   server:extra", "3 skills verified, 0 failed"}, nil, nil},
		{"install refuses the untrusted skills and writes nothing", []string{"install", url, "--project", "--agent", "agents", "--trusted-key", acmePub}, 1,
			nil, []string{"install: " + url + ": skill skill://docx/SKILL.md from origin ", " refused: signature refused: signed by key"}, nil},
		{"install of the trusted skill", []string{"install", url, "--project", "--agent", "agents", "--skill", "pdf", "--trusted-key", acmePub}, 0,
			[]string{"pdf -> "}, nil, nil},
	})
	if _, err := os.Stat(filepath.Join(project, "pulled", "pdf", "SKILL.md")); err != nil {
		t.Errorf("pull did not write the trusted skill: %v", err)
	}
	if _, err := os.Stat(filepath.Join(project, "pulled", "docx")); err == nil {
		t.Error("pull wrote the skill signed by another key")
	}
	lock := readLock(t, filepath.Join(project, "skills.lock"))
	if len(lock.Skills) != 1 || !strings.HasPrefix(lock.Skills[0].Signer, "key:") {
		t.Fatalf("the lock does not record the signer: %+v", lock.Skills)
	}

	// The gateway publishes only what the policy admits.
	tf := trustFlag{policyFile: policy}
	if err := tf.load("gateway"); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.ParseConfig(filepath.Join(project, "gateway.json"), []byte(`{"mcpServers": {"acme": {"url": "`+url+`"}}, "approvals": {"store": "`+filepath.Join(project, "approvals.json")+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Open(cfg, &gateway.Options{Trust: tf.hook()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.Start(ctx)
	<-g.Ready()
	var names []string
	for _, e := range g.Host().Skills() {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "pdf" {
		t.Errorf("gateway publishes %v, want only pdf", names)
	}
	refused := 0
	for _, d := range g.Host().Diagnostics() {
		if d.Refused && strings.Contains(d.Message, "from origin acme refused") {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("gateway: %d refusals, want 2: %v", refused, g.Host().Diagnostics())
	}

	g.Close()

	// The server's pdf is now signed by the other key, which a policy
	// also trusts: install refuses the change of signer the lock records
	// until it is accepted.
	stop()
	otherPriv := strings.TrimSuffix(otherPub, ".pub") + ".key"
	if err := runSign(&bytes.Buffer{}, otherPriv, dir); err != nil {
		t.Fatal(err)
	}
	startServeProcess(t, bin, addr, dir)
	both := []string{"install", url, "--project", "--agent", "agents", "--skill", "pdf", "--trusted-key", acmePub, "--trusted-key", otherPub}
	out, errOut, code := runCLI(t, both...)
	if want := "skills.lock records it signed by " + lock.Skills[0].Signer + ", and it is now signed by key:"; code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--allow-signer-change") {
		t.Errorf("signer change: exit %d, want 1 and %q\n%s%s", code, want, out, errOut)
	}
	out, errOut, code = runCLI(t, "install", url, "--project", "--agent", "agents", "--skill", "pdf")
	if code != 1 || !strings.Contains(errOut, "it was not verified now") {
		t.Errorf("signer no longer verified: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, append(both, "--allow-signer-change")...); code != 0 {
		t.Errorf("--allow-signer-change: exit %d\n%s%s", code, out, errOut)
	}
	if l := readLock(t, filepath.Join(project, "skills.lock")); len(l.Skills) != 1 || l.Skills[0].Signer == lock.Skills[0].Signer || !strings.HasPrefix(l.Skills[0].Signer, "key:") {
		t.Errorf("the lock does not record the new signer: %+v", l.Skills)
	}

}

// cliCase is one in-process CLI run and what its output must hold.
type cliCase struct {
	name  string
	args  []string
	code  int
	out   []string // in stdout
	err   []string // in stderr
	notIn []string // in neither
}

// runCases runs each case with runCLI and checks its exit status and
// output.
func runCases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		out, errOut, code := runCLI(t, tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, tc.code, out, errOut)
		}
		for _, w := range tc.out {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.name, w, out)
			}
		}
		for _, w := range tc.err {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, w, errOut)
			}
		}
		for _, w := range tc.notIn {
			if strings.Contains(out+errOut, w) {
				t.Errorf("%s: output has %q:\n%s%s", tc.name, w, out, errOut)
			}
		}
	}
}
