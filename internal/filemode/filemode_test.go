package filemode

import (
	"io/fs"
	"testing"
)

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

func TestFromPermAndOf(t *testing.T) {
	for _, tc := range []struct {
		perm    fs.FileMode
		content string
		rec     fs.FileMode // what a catalog records
		out     fs.FileMode // what is written
	}{
		{0o755, "echo hi\n", 0o755, 0o755},   // executable without "#!": kept
		{0o700, "", 0o755, 0o755},            // any execute bit
		{0o100, "", 0o755, 0o755},            //
		{0o644, "#!/bin/sh\n", 0o644, 0o644}, // "#!" but not executable: kept
		{0o600, "x", 0o644, 0o644},           // the umask does not show
		{0o444, "x", 0o644, 0o644},           // git's non-executable blob
		{0o555, "x", 0o755, 0o755},           // git's 100755 blob
		{0, "#!/bin/sh\n", 0, 0o755},         // no mode recorded: the "#!" rule
		{0, "echo hi\n", 0, 0o644},           //
		{fs.ModeDir | 0o755, "", 0o755, 0o755},
	} {
		rec := FromPerm(tc.perm)
		if rec != tc.rec {
			t.Errorf("FromPerm(%v) = %o, want %o", tc.perm, rec, tc.rec)
		}
		if got := Of(rec, []byte(tc.content)); got != tc.out {
			t.Errorf("Of(%o, %q) = %o, want %o", rec, tc.content, got, tc.out)
		}
	}
}
