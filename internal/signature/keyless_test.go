package signature

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"

	"github.com/skillport/skillport/internal/sigstoretest"
)

const (
	testIssuer  = "https://token.actions.example"
	testSubject = "release@acme.example"
)

// virtualSigstore is sigstore-go's in-process test CA and log, and its
// trusted root as the JSON file a host is given.
func virtualSigstore(t testing.TB) (*ca.VirtualSigstore, []byte) {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return vs, sigstoretest.VirtualRoot(t, vs)
}

// keylessBundle signs set's statement with a certificate the test CA
// issues to subject by issuer, logged at integrated with an inclusion
// proof, as a v0.3 bundle.
func keylessBundle(t testing.TB, vs *ca.VirtualSigstore, set *Set, subject, issuer string, integrated time.Time) []byte {
	t.Helper()
	st, err := set.Statement()
	if err != nil {
		t.Fatal(err)
	}
	ent, err := vs.AttestAtTime(subject, issuer, st, integrated, true)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ent.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := ent.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	tles, err := ent.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	// The test log's entry lacks what a v0.3 bundle carries beside the
	// inclusion proof: its kind and the log's signed entry timestamp.
	tle := tles[0].TransparencyLogEntry()
	var kv struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kv); err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
	logID, err := vs.RekorLogID()
	if err != nil {
		t.Fatal(err)
	}
	set2, err := vs.RekorSignPayload(tlog.RekorPayload{LogID: logID, IntegratedTime: tle.IntegratedTime, LogIndex: tle.LogIndex, Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody)})
	if err != nil {
		t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set2}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:     &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries: []*protorekor.TransparencyLogEntry{tle},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestKeyless verifies keyless bundles offline against a trusted-root
// file: the certificate chains to the test Fulcio, the log inclusion is
// proved from the bundle, the identity is the policy's.
func TestKeyless(t *testing.T) {
	vs, rootJSON := virtualSigstore(t)
	set := sampleSet("skill://acme/pdf/SKILL.md")
	v, err := NewVerifier(Trust{Root: rootJSON, Keyless: []Keyless{{Issuer: testIssuer, Subject: `release@acme\.example`}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := keylessBundle(t, vs, set, testSubject, testIssuer, now.Add(5*time.Minute))
	id, err := v.Verify(set, good)
	if err != nil {
		t.Fatalf("keyless bundle of an allowed identity: %v", err)
	}
	if id.Subject != testSubject || id.Issuer != testIssuer || id.Ref() != "keyless:"+testIssuer+" "+testSubject {
		t.Errorf("signer %+v", id)
	}
	changed := sampleSet("skill://acme/pdf/SKILL.md")
	changed.Resources[1].Size++
	otherVS, otherRoot := virtualSigstore(t)
	for _, tc := range []struct {
		name string
		set  *Set
		raw  []byte
		v    *Verifier
		want string
	}{
		{"identity outside the policy", set, keylessBundle(t, vs, set, "mallory@evil.example", testIssuer, now.Add(5*time.Minute)), v, "mallory@evil.example (issuer " + testIssuer + "), which the trust policy does not allow"},
		{"another issuer", set, keylessBundle(t, vs, set, testSubject, "https://evil.example", now.Add(5*time.Minute)), v, "which the trust policy does not allow"},
		// The certificate is valid for 10 minutes from now; logged an hour
		// later, it had expired when it was used.
		{"expired certificate", set, keylessBundle(t, vs, set, testSubject, testIssuer, now.Add(time.Hour)), v, "integrated time outside certificate validity"},
		{"a changed file", changed, good, v, "changed after signing"},
		{"another CA and log", set, keylessBundle(t, otherVS, set, testSubject, testIssuer, now.Add(5*time.Minute)), v, "not enough verified log entries"},
		{"keys only", set, good, mustVerifier(t, Trust{Keys: [][]byte{pubOnly(t)}}), "no keyless signer is trusted"},
		{"another trusted root", set, good, mustVerifier(t, Trust{Root: otherRoot, Keyless: []Keyless{{Issuer: testIssuer, Subject: ".*"}}}), "bad signature"},
	} {
		_, err := tc.v.Verify(tc.set, tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// The same through a policy file naming the trusted root.
	p, err := ParsePolicy([]byte(`{"trustedRoot":"root.json","origins":{"acme":{"keyless":[{"issuer":"`+testIssuer+`","subject":".*@acme\\.example"}]}}}`),
		func(string) ([]byte, error) { return rootJSON, nil })
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.For("acme").Verify(set, good); err != nil || id.Subject != testSubject {
		t.Errorf("policy file: %+v %v", id, err)
	}
	// Without trusted material the signer is named, the binding checked.
	if id, err := Inspect(set, good); err != nil || id.Subject != testSubject {
		t.Errorf("Inspect: %+v %v", id, err)
	}
}

func mustVerifier(t *testing.T, tr Trust) *Verifier {
	t.Helper()
	v, err := NewVerifier(tr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func pubOnly(t *testing.T) []byte {
	_, pub := newKeys(t, false)
	return pub
}
