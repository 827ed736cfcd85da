package registry_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/registry"
	"github.com/skillport/skillport/server"
)

var benchSkills = flag.Int("registrybench.skills", 10_000, "skills in the tree of the registry benchmarks")

var (
	published     sync.Once
	publishedDSN  string
	publishedTree string
)

// publishedBig returns a database holding the benchmark tree published
// under the namespace "big", publishing it on first use.
func publishedBig(b *testing.B) (dsn, tree string) {
	b.Helper()
	published.Do(func() {
		publishedTree = cachedTree(b, *benchSkills)
		publishedDSN = newDB(b)
		conn, err := registry.Connect(context.Background(), publishedDSN)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := registry.Publish(context.Background(), conn, openCat(b, publishedTree, "big"), nil); err != nil {
			b.Fatal(err)
		}
	})
	return publishedDSN, publishedTree
}

// BenchmarkPublish10k publishes the tree into an empty database and
// compares it with building the same catalog from the directory, then
// re-publishes it with one skill changed.
func BenchmarkPublish10k(b *testing.B) {
	tree := cachedTree(b, *benchSkills)
	ctx := context.Background()
	var build, store, restore time.Duration
	for b.Loop() {
		conn := connect(b, newDB(b))
		t0 := time.Now()
		cat := openCat(b, tree, "")
		t1 := time.Now()
		if _, err := registry.Publish(ctx, conn, cat, nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		build += t1.Sub(t0)
		store += t2.Sub(t1)
		b.StopTimer()
		changed, err := catalog.Open(overlay{os.DirFS(tree), fstest.MapFS{"skill-00001/references/GUIDE.md": {Data: []byte("changed\n")}}}, &catalog.Options{Logger: discard})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t3 := time.Now()
		res, err := registry.Publish(ctx, conn, changed, nil)
		if err != nil || len(res.Changed) != 1 {
			b.Fatalf("re-publish: %+v %v", res, err)
		}
		restore += time.Since(t3)
	}
	b.ReportMetric(build.Seconds()*1000/float64(b.N), "build-ms")
	b.ReportMetric(store.Seconds()*1000/float64(b.N), "publish-ms")
	b.ReportMetric(restore.Seconds()*1000/float64(b.N), "republish-ms")
	// The targets: publishing (building the catalog, then storing
	// it) ≤ 2× the build alone; re-publishing one change ≤ 0.05× the first
	// publish (the catalog build of the re-publish is the caller's: a
	// long-running publisher reuses digests through Catalog.Reload).
	b.ReportMetric(float64(build+store)/float64(build), "publish/build")
	b.ReportMetric(float64(store)/float64(build), "store/build")
	b.ReportMetric(float64(restore)/float64(store), "republish/publish")
}

// BenchmarkPropagation publishes a one-skill change 50 times per iteration
// while two replicas serve the big tree, and reports the time from the
// start of the publish until both replicas serve the new generation.
func BenchmarkPropagation(b *testing.B) {
	dsn, _ := publishedBig(b)
	conn := connect(b, dsn)
	r1, r2 := openReplica(b, dsn), openReplica(b, dsn)
	type swap struct {
		gen int64
		at  time.Time
	}
	swaps := make(chan swap, 1000)
	for _, r := range []*registry.Source{r1, r2} {
		// A server on each replica, as in skillport serve: its own
		// reaction to the change (list_changed, indexes) runs first.
		if _, _, err := server.New(nil, r, &server.Options{Logger: discard}); err != nil {
			b.Fatal(err)
		}
		r.OnChange(func(_, _ server.Snapshot) { swaps <- swap{r.Generation(), time.Now()} })
	}
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		for range 50 {
			i++
			body := fmt.Sprintf("---\nname: hot\ndescription: Changed %d times.\n---\n# Hot\n", i)
			cat, err := catalog.Open(fstest.MapFS{"hot/SKILL.md": {Data: []byte(body)}}, &catalog.Options{Prefix: "team", Logger: discard})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			res, err := registry.Publish(ctx, conn, cat, nil)
			if err != nil {
				b.Fatal(err)
			}
			seen := 0
			var last time.Time
			for seen < 2 {
				select {
				case s := <-swaps:
					if s.gen == res.Generation {
						seen++
						last = s.at
					}
				case <-time.After(10 * time.Second):
					b.Fatalf("replicas did not serve generation %d within 10s", res.Generation)
				}
			}
			lat = append(lat, last.Sub(t0))
		}
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return lat[int(q*float64(len(lat)-1))].Seconds() * 1000 }
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(p(0.99)/250, "p99/target")
}

// BenchmarkReads reads the same 1,000 files from a directory server and
// a registry replica (warm cache), alternating, over in-memory sessions.
func BenchmarkReads(b *testing.B) {
	dsn, tree := publishedBig(b)
	cat := openCat(b, tree, "big")
	src := openReplica(b, dsn)
	var uris []string
	for i, f := range server.NewCatalogSource(cat).Snapshot().Files() {
		if i%20 == 0 {
			uris = append(uris, f.URI)
		}
		if len(uris) == 1000 {
			break
		}
	}
	session := func(s server.Source) *mcp.ClientSession {
		srv, _, err := server.New(nil, s, &server.Options{TTL: -1, Logger: discard})
		if err != nil {
			b.Fatal(err)
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close(); ss.Close() })
		return cs
	}
	dirCS, regCS := session(server.NewCatalogSource(cat)), session(src)
	ctx := context.Background()
	readAll := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		for _, u := range uris {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: u}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	readAll(regCS) // warm the replica's cache and the page cache
	readAll(dirCS)
	var dir, reg time.Duration
	for b.Loop() {
		dir += readAll(dirCS)
		reg += readAll(regCS)
	}
	n := float64(b.N * len(uris))
	b.ReportMetric(n/dir.Seconds(), "dir-reads/s")
	b.ReportMetric(n/reg.Seconds(), "replica-reads/s")
	b.ReportMetric(float64(dir)/float64(reg), "replica/dir")
}

// BenchmarkReplicaRSS starts skillport serve on the published tree, as a
// replica and from the directory, and reports each one's resident memory
// after it has read 2,000 files.
func BenchmarkReplicaRSS(b *testing.B) {
	dsn, tree := publishedBig(b)
	bin := skillportBin(b)
	rss := func(target ...string) float64 {
		cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0", "--watch=false"}, target...)...)
		pipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		buf := make([]byte, 64<<10)
		var out []byte
		re := regexp.MustCompile(`at (http://\S+/mcp)`)
		deadline := time.Now().Add(120 * time.Second)
		var url string
		for url == "" {
			n, err := pipe.Read(buf)
			out = append(out, buf[:n]...)
			if m := re.FindSubmatch(out); m != nil {
				url = string(m[1])
			}
			if err != nil || time.Now().After(deadline) {
				b.Fatalf("serve %v: %v\n%s", target, err, out)
			}
		}
		go func() {
			for {
				if _, err := pipe.Read(buf); err != nil {
					return
				}
			}
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for i := range 2000 {
			u := fmt.Sprintf("skill://big/skill-%05d/references/GUIDE.md", i*(*benchSkills/2000))
			if i*(*benchSkills/2000)%20 == 0 {
				u = fmt.Sprintf("skill://big/team-%02d/skill-%05d/references/GUIDE.md", i*(*benchSkills/2000)%7, i*(*benchSkills/2000))
			}
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: u}); err != nil {
				b.Fatalf("%s: %v", u, err)
			}
		}
		return rssMiB(cmd.Process.Pid)
	}
	var reg, dir float64
	for b.Loop() {
		reg = rss(dsn)
		dir = rss("--prefix", "big", tree)
	}
	b.ReportMetric(reg, "replica-rss-MiB")
	b.ReportMetric(dir, "dir-rss-MiB")
	b.ReportMetric(reg/dir, "replica/dir-rss")
}

func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		return -1
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}
