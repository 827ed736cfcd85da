package signature

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	_, pub := newKeys(t, false)
	files := map[string][]byte{"acme.pub": pub, "bad.pub": []byte("not a key")}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, errors.New(p + ": no such file")
	}
	for _, tc := range []struct {
		name, policy, err string
	}{
		{"one origin", `{"origins":{"acme":{"keys":["acme.pub"]}}}`, ""},
		{"any origin", `{"origins":{"*":{"keys":["acme.pub"]}}}`, ""},
		{"not JSON", `{"origins":`, "not a trust policy"},
		{"unknown field", `{"origins":{"acme":{"key":["acme.pub"]}}}`, `unknown field "key"`},
		{"trailing data", `{"origins":{"acme":{"keys":["acme.pub"]}}} {}`, "trailing data"},
		{"no origins", `{"origins":{}}`, `"origins" is empty`},
		{"bad label", `{"origins":{"Acme Corp":{"keys":["acme.pub"]}}}`, `origin "Acme Corp": not an origin label`},
		{"nobody", `{"origins":{"acme":{}}}`, "origin acme: no keys and no keyless identities"},
		{"missing key file", `{"origins":{"acme":{"keys":["gone.pub"]}}}`, "origin acme: keys: gone.pub: no such file"},
		{"bad key", `{"origins":{"acme":{"keys":["bad.pub"]}}}`, "origin acme: not a PEM public key"},
		{"keyless without a root", `{"origins":{"acme":{"keyless":[{"issuer":"https://issuer.example","subject":".*"}]}}}`, `origin acme: keyless identities need "trustedRoot"`},
		{"missing root", `{"trustedRoot":"root.json","origins":{"acme":{"keys":["acme.pub"]}}}`, "trustedRoot: root.json: no such file"},
		{"huge", `{"origins":{"acme":{"keys":["` + strings.Repeat("a", MaxPolicyBytes) + `"]}}}`, "over the"},
	} {
		p, err := ParsePolicy([]byte(tc.policy), read)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && p.For("acme") == nil:
			t.Errorf("%s: no verifier for acme", tc.name)
		}
	}
	p, err := ParsePolicy([]byte(`{"origins":{"acme":{"keys":["acme.pub"]}}}`), read)
	if err != nil {
		t.Fatal(err)
	}
	if p.For("other") != nil {
		t.Error("an origin the policy does not name has a verifier")
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`{"origins":{"acme":{"keys":["acme.pub"]},"*":{"keyless":[{"issuer":"i","subject":"(a|b)+"}]}},"trustedRoot":"r.json"}`))
	f.Add([]byte(`{"origins":{"a":{"keyless":[{"issuer":"i","subject":"("}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParsePolicy(data, func(string) ([]byte, error) { return []byte("{}"), nil })
	})
}
