package registry_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/skillserver"
)

var benchSkills = flag.Int("registrybench.skills", 10_000, "skills in the tree of the registry benchmarks")

var (
	publishOnce   sync.Once
	publishedDSN  string
	publishedTree string
)

// publishedBig returns a database holding the benchmark tree published
// under the namespace "big", publishing it on first use.
func publishedBig(b *testing.B) (dsn, tree string) {
	b.Helper()
	publishOnce.Do(func() {
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

// republishes is how many one-skill re-publishes each iteration of
// BenchmarkPublish10k measures.
const republishes = 15

// BenchmarkPublish10k publishes the tree into an empty database and
// compares it with building the same catalog from the directory, then
// re-publishes it with one skill changed, several times, as a long-running
// publisher does: the catalog is reloaded (Catalog.Reload re-hashes only
// the changed file) and published. Each iteration's ratios are kept; the
// median is reported with the lowest and highest, so that a ratio
// disturbed by the machine's load shows as spread instead of passing as
// the figure.
func BenchmarkPublish10k(b *testing.B) {
	// A copy: the benchmark replaces a file, and the cached tree must not change.
	tree := copyTree(b, cachedTree(b, *benchSkills))
	guide := filepath.Join(tree, "skill-00001", "references", "GUIDE.md")
	ctx := context.Background()
	var pubRatio, reRatio, reTotalRatio, cpuRatio []float64
	var build, store, reload, restore, rePlan time.Duration
	var buildCPU, storeCPU, dbCPU time.Duration
	var phases registry.PublishTiming
	var res int
	for b.Loop() {
		b.StopTimer()
		conn := connect(b, newDB(b))
		b.StartTimer()
		c0, t0 := cputime.Self(), time.Now()
		cat := openCat(b, tree, "")
		c1, t1, db1 := cputime.Self(), time.Now(), serverCPU(conn.PgConn().PID())
		first, err := registry.Publish(ctx, conn, cat, nil)
		if err != nil {
			b.Fatal(err)
		}
		c2, t2, db2 := cputime.Self(), time.Now(), serverCPU(conn.PgConn().PID())
		build += t1.Sub(t0)
		store += t2.Sub(t1)
		buildCPU += c1 - c0
		storeCPU += c2 - c1
		dbCPU += cpuSince(db1, db2)
		if c1 > c0 && runtime.GOOS == "linux" { // elsewhere the database's CPU is unknown
			cpuRatio = append(cpuRatio, float64(c2-c0+cpuSince(db1, db2))/float64(c1-c0))
		}
		phases.Plan += first.Timing.Plan
		phases.Content += first.Timing.Content
		phases.Metadata += first.Timing.Metadata
		phases.Commit += first.Timing.Commit
		pubRatio = append(pubRatio, float64(t2.Sub(t0))/float64(t1.Sub(t0)))
		for range republishes {
			res++
			b.StopTimer()
			if err := os.WriteFile(guide+".new", fmt.Appendf(nil, "changed %d\n", res), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(guide+".new", guide); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			t3 := time.Now()
			next, err := cat.Reload()
			if err != nil {
				b.Fatal(err)
			}
			t4 := time.Now()
			r, err := registry.Publish(ctx, conn, next, nil)
			if err != nil || len(r.Changed) != 1 || r.Unchanged != *benchSkills-1 {
				b.Fatalf("re-publish: %+v %v", r, err)
			}
			t5 := time.Now()
			cat = next
			reload += t4.Sub(t3)
			restore += t5.Sub(t4)
			rePlan += r.Timing.Plan
			reRatio = append(reRatio, float64(t5.Sub(t4))/float64(t2.Sub(t1)))
			reTotalRatio = append(reTotalRatio, float64(t5.Sub(t3))/float64(t2.Sub(t0)))
		}
	}
	ms := func(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }
	b.ReportMetric(ms(build, b.N), "build-ms")
	b.ReportMetric(ms(store, b.N), "publish-ms")
	// CPU time, steadier than wall time on a shared machine: the build's
	// and the publish's in this process, and the database server's during
	// the publish (its processes run on the same cores).
	b.ReportMetric(ms(buildCPU, b.N), "build-cpu-ms")
	b.ReportMetric(ms(storeCPU, b.N), "publish-cpu-ms")
	b.ReportMetric(ms(dbCPU, b.N), "publish-db-cpu-ms")
	// Where the first publish spends its time.
	b.ReportMetric(ms(phases.Plan, b.N), "plan-ms")
	b.ReportMetric(ms(phases.Content, b.N), "content-ms")
	b.ReportMetric(ms(phases.Metadata, b.N), "metadata-ms")
	b.ReportMetric(ms(phases.Commit, b.N), "commit+analyze-ms")
	b.ReportMetric(ms(reload, res), "reload-ms")
	b.ReportMetric(ms(restore, res), "republish-ms")
	b.ReportMetric(ms(rePlan, res), "republish-plan-ms")
	// The targets: publishing (building the catalog, then storing
	// it) ≤ 2× the build alone; re-publishing one change ≤ 0.05× the first
	// publish. The re-publish's catalog reload is reported apart: a
	// one-shot publisher has no earlier catalog and hashes the whole tree.
	report := func(name string, rs []float64) {
		slices.Sort(rs)
		b.ReportMetric(rs[len(rs)/2], name)
		b.ReportMetric(rs[0], name+"-min")
		b.ReportMetric(rs[len(rs)-1], name+"-max")
	}
	report("publish/build", pubRatio)
	if len(cpuRatio) > 0 {
		// (build + publish + the server's work) / build, in CPU time.
		report("publish/build-cpu", cpuRatio)
	}
	report("republish/publish", reRatio)
	report("(reload+republish)/(build+publish)", reTotalRatio)
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
		if _, _, err := skillserver.New(nil, r, &skillserver.Options{Logger: discard}); err != nil {
			b.Fatal(err)
		}
		r.OnChange(func(_, _ published.Snapshot) { swaps <- swap{r.Generation(), time.Now()} })
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
	for i, f := range published.NewCatalogSource(cat).Snapshot().Files() {
		if i%20 == 0 {
			uris = append(uris, f.URI)
		}
		if len(uris) == 1000 {
			break
		}
	}
	session := func(s published.Source) *mcp.ClientSession {
		srv, _, err := skillserver.New(nil, s, &skillserver.Options{TTL: -1, Logger: discard})
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
	dirCS, regCS := session(published.NewCatalogSource(cat)), session(src)
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
