package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillport/skillport/catalog"
)

var updateValidate = flag.Bool("update-validate", false, "rewrite testdata/validate-*.golden from the current output")

// validate's whole output on the collection fixture (every shape of the
// public collections: warnings, refusals, skipped entry files, mapped
// prefixes, duplicates) is fixed by golden files: what it prints, on which
// stream, and its exit code, plain, --strict and --json. A change to how
// validate walks or checks the tree must not change a byte of it.
func TestValidateGolden(t *testing.T) {
	tmp := t.TempDir()
	if err := os.CopyFS(filepath.Join(tmp, "collections"), os.DirFS("../../catalog/testdata/collections")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		golden string
		json   bool
		opts   catalog.Options
	}{
		{"validate-collections.golden", false, catalog.Options{}},
		{"validate-collections-strict.golden", false, catalog.Options{Strict: true}},
		{"validate-collections-json.golden", true, catalog.Options{}},
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp) // paths are printed as given: relative, so the golden holds no temporary directory
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runValidate(&out, &errOut, []string{"collections"}, tt.json, &tt.opts)
			got := fmt.Sprintf("%s--- stderr\n%s--- exit %d\n", out.String(), errOut.String(), exitCode(err))
			file := filepath.Join(wd, "testdata", tt.golden)
			if *updateValidate {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("validate output differs from %s (go test -run TestValidateGolden -update-validate rewrites it)\ngot:\n%s\nwant:\n%s", tt.golden, got, want)
			}
		})
	}
}
