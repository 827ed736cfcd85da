package gitsource_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/published"
)

func ExampleParseSpec() {
	sp, err := gitsource.ParseSpec("git+https://github.com/anthropics/skills@main#skills")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sp.URL)
	fmt.Println(sp.Ref, sp.Subdir, sp.IsCommit())
	// Output:
	// https://github.com/anthropics/skills
	// main skills false
}

// ExampleOpen serves a branch of a repository and follows it: the catalog
// is the commit's tree, and each new commit is swapped in, re-hashing only
// the blobs that changed, so that clients get list_changed.
func ExampleOpen() {
	ctx := context.Background()
	sp, err := gitsource.ParseSpec("git+https://github.com/anthropics/skills@main#skills")
	if err != nil {
		log.Fatal(err)
	}
	src, err := gitsource.Open(ctx, sp, &gitsource.Options{Catalog: &catalog.Options{Prefix: "anthropic"}})
	if err != nil {
		log.Fatal(err) // unreachable remote and no mirror yet, bad credentials, ...
	}
	fmt.Println(src.Status().Commit, len(src.Catalog().Skills()))

	served := published.NewCatalogSource(src.Catalog())
	go src.Watch(ctx, time.Minute, served.Swap)
	// skillserver.New(impl, served, opts) serves it; gitsource.Webhook(secret,
	// []*gitsource.Source{src}, logger) makes a push visible at once.
}
