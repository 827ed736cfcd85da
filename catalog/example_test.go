package catalog_test

import (
	"fmt"
	"log/slog"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
)

// A catalog can be built from any fs.FS; here an in-memory tree with a
// skill under an organizational prefix and one invalid skill.
func ExampleOpen() {
	tree := fstest.MapFS{
		"acme/refunds/SKILL.md":          {Data: []byte("---\nname: refunds\ndescription: Process refunds.\n---\n# Refunds\n")},
		"acme/refunds/examples/email.md": {Data: []byte("Dear customer,\n")},
		"broken/SKILL.md":                {Data: []byte("no frontmatter\n")},
	}
	cat, err := catalog.Open(tree, &catalog.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	for _, s := range cat.Skills() {
		fmt.Println(s.URI, s.Name)
		for _, f := range s.Files {
			fmt.Println("  ", f.URI, f.Size, f.MIMEType, f.Digest[:15])
		}
	}
	for _, d := range cat.Diagnostics() {
		fmt.Printf("left out: %s:%d: %s\n", d.Path, d.Line, d.Rule)
	}
	// Output:
	// skill://acme/refunds/SKILL.md refunds
	//    skill://acme/refunds/SKILL.md 62 text/markdown sha256:df77c918
	//    skill://acme/refunds/examples/email.md 15 text/markdown sha256:7b7c2be2
	// left out: broken/SKILL.md:1: frontmatter-missing
}

// Directory resources cover skill roots, their subdirectories and the prefix
// levels above them.
func ExampleCatalog_Dir() {
	tree := fstest.MapFS{
		"acme/refunds/SKILL.md":          {Data: []byte("---\nname: refunds\ndescription: Process refunds.\n---\n")},
		"acme/refunds/examples/email.md": {Data: []byte("Dear customer,\n")},
	}
	cat, _ := catalog.Open(tree, &catalog.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, uri := range []string{"skill://acme", "skill://acme/refunds"} {
		for _, ch := range cat.Dir(uri).Children {
			fmt.Println(uri, "->", ch.URI, ch.IsDir())
		}
	}
	// Output:
	// skill://acme -> skill://acme/refunds true
	// skill://acme/refunds -> skill://acme/refunds/SKILL.md false
	// skill://acme/refunds -> skill://acme/refunds/examples true
}

// ReadFile returns exactly the bytes the snapshot digested.
func ExampleCatalog_ReadFile() {
	tree := fstest.MapFS{"pdf/SKILL.md": {Data: []byte("---\nname: pdf\ndescription: PDFs.\n---\nBody.\n")}}
	cat, _ := catalog.Open(tree, nil)
	data, err := cat.ReadFile(cat.File("skill://pdf/SKILL.md"))
	fmt.Printf("%q %v\n", data, err)
	// Output:
	// "---\nname: pdf\ndescription: PDFs.\n---\nBody.\n" <nil>
}
