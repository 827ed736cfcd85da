package filemode

import "testing"

func TestMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"#!/bin/sh\necho hi\n", 0o755},
		{"#!/usr/bin/env python3\n", 0o755},
		{"# a heading\n", 0o644},
		{" #!/bin/sh\n", 0o644},
		{"\x7fELF", 0o644},
		{"", 0o644},
	} {
		if got := Mode([]byte(tc.in)); uint32(got) != tc.want {
			t.Errorf("Mode(%q) = %o, want %o", tc.in, got, tc.want)
		}
	}
}
