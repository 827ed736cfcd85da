package host

import "testing"

// BenchmarkDecodeEntry decodes one typical skills/list entry: the host's
// share of discovery CPU per skill.
func BenchmarkDecodeEntry(b *testing.B) {
	raw := []byte(`{"uri":"skill://acme/billing/refunds/SKILL.md","frontmatter":{"name":"refunds","description":"Process customer refunds for the billing team, within policy and with an audit trail.","license":"Apache-2.0","metadata":{"owner":"billing","version":"1.2"},"allowed-tools":"Read Grep"},"resources":[{"uri":"skill://acme/billing/refunds/SKILL.md","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":812},{"uri":"skill://acme/billing/refunds/references/policy.md","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":2048},{"uri":"skill://acme/billing/refunds/examples/email.md","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":512}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEntry("acme", raw); err != nil {
			b.Fatal(err)
		}
	}
}
