package host

import (
	"errors"
	"strings"
	"testing"
)

// TestEntrySizes: a size is read from the entry's bytes as a
// non-negative JSON integer of at most 2^63-1; anything else, including
// one past the limit, leaves the entry out with the reason.
func TestEntrySizes(t *testing.T) {
	const h0 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, tc := range []struct {
		size string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"7", 7, ""},
		{"16777216", 16 << 20, ""},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"9223372036854775808", 0, "out of range"},
		{"99999999999999999999999", 0, "out of range"},
		{"-1", 0, "not a non-negative integer"},
		{"-0", 0, "not a non-negative integer"},
		{"1.5", 0, "not a non-negative integer"},
		{"1e3", 0, "not a non-negative integer"},
		{`"12"`, 0, "not a non-negative integer"},
		{"null", 0, "not a non-negative integer"},
		{"true", 0, "not a non-negative integer"},
	} {
		raw := `{"uri":"skill://s/SKILL.md","frontmatter":{"name":"s","description":"d"},"resources":[{"uri":"skill://s/SKILL.md","digest":"` + h0 + `","size":` + tc.size + `}]}`
		e, err := DecodeEntry("o", []byte(raw))
		if tc.err != "" {
			if !errors.Is(err, ErrInvalidEntry) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "size") {
				t.Errorf("size %s: %v; want ErrInvalidEntry saying %q", tc.size, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("size %s: %v", tc.size, err)
			continue
		}
		if e.Files[0].Size != tc.want {
			t.Errorf("size %s read as %d", tc.size, e.Files[0].Size)
		}
	}
}
