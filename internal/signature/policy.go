package signature

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// MaxPolicyBytes bounds a trust policy file.
const MaxPolicyBytes = 1 << 20

// Any is the origin name of the policy entry that applies to every origin
// the policy does not name.
const Any = "*"

// Policy is a host's trust policy: per origin, who may sign its skills.
// Its format is described in docs/signing.md.
type Policy struct {
	origins map[string]*Verifier
}

// PolicyFile is the JSON form of a trust policy.
type PolicyFile struct {
	// TrustedRoot is the path of a Sigstore trusted root
	// (trusted_root.json), relative to the policy file; keyless
	// identities are checked against it, offline.
	TrustedRoot string `json:"trustedRoot,omitempty"`
	// Origins maps an origin's label (or "*") to who may sign its skills.
	Origins map[string]OriginPolicy `json:"origins"`
}

// OriginPolicy says who may sign one origin's skills: any of the keys, or
// any of the keyless identities.
type OriginPolicy struct {
	// Keys are paths of PEM public keys, relative to the policy file.
	Keys    []string  `json:"keys,omitempty"`
	Keyless []Keyless `json:"keyless,omitempty"`
}

var originName = regexp.MustCompile(`^(\*|[a-z0-9][a-z0-9-]{0,31})$`)

// ParsePolicy parses a trust policy file; read returns the content of
// the key and trusted-root files it names (paths as written, to be
// resolved against the policy file's folder by the caller). Errors name
// the origin and field.
func ParsePolicy(data []byte, read func(path string) ([]byte, error)) (*Policy, error) {
	if len(data) > MaxPolicyBytes {
		return nil, fmt.Errorf("the policy is %d bytes, over the %d-byte limit", len(data), MaxPolicyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var pf PolicyFile
	if err := dec.Decode(&pf); err != nil {
		return nil, fmt.Errorf("not a trust policy: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a trust policy: trailing data after the JSON object")
	}
	if len(pf.Origins) == 0 {
		return nil, errors.New(`"origins" is empty: name each origin's label (or "*") and the keys or keyless identities that may sign its skills`)
	}
	var rootJSON []byte
	if pf.TrustedRoot != "" {
		b, err := read(pf.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("trustedRoot: %w", err)
		}
		rootJSON = b
	}
	p := &Policy{origins: map[string]*Verifier{}}
	names := make([]string, 0, len(pf.Origins))
	for name := range pf.Origins {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		op := pf.Origins[name]
		if !originName.MatchString(name) {
			return nil, fmt.Errorf("origin %q: not an origin label (lower-case letters, digits and -, at most 32) nor \"*\"", clipName(name))
		}
		if len(op.Keys) == 0 && len(op.Keyless) == 0 {
			return nil, fmt.Errorf("origin %s: no keys and no keyless identities: nobody could sign its skills", name)
		}
		t := Trust{Keyless: op.Keyless}
		if len(op.Keyless) > 0 {
			if rootJSON == nil {
				return nil, fmt.Errorf("origin %s: keyless identities need \"trustedRoot\" (a trusted_root.json file)", name)
			}
			t.Root = rootJSON
		}
		for _, k := range op.Keys {
			b, err := read(k)
			if err != nil {
				return nil, fmt.Errorf("origin %s: keys: %w", name, err)
			}
			t.Keys = append(t.Keys, b)
		}
		v, err := NewVerifier(t)
		if err != nil {
			return nil, fmt.Errorf("origin %s: %w", name, err)
		}
		p.origins[name] = v
	}
	return p, nil
}

// KeysPolicy is the policy of --trusted-key: every origin's skills must be
// signed by one of the keys.
func KeysPolicy(pemKeys [][]byte) (*Policy, error) {
	v, err := LoadVerifier(pemKeys...)
	if err != nil {
		return nil, err
	}
	return &Policy{origins: map[string]*Verifier{Any: v}}, nil
}

// For returns the verifier of the origin labelled label, else that of
// "*", else nil: the policy does not say who may sign that origin's
// skills, so none is accepted.
func (p *Policy) For(label string) *Verifier {
	if v := p.origins[label]; v != nil {
		return v
	}
	return p.origins[Any]
}

// Ref is the stable form of an identity a lock file records: "key:<hex
// key id>" or "keyless:<issuer> <subject>".
func (id Identity) Ref() string {
	switch {
	case id.KeyID != "":
		return "key:" + id.KeyID
	case id.IsZero():
		return ""
	}
	return "keyless:" + id.Issuer + " " + id.Subject
}

func clipName(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
