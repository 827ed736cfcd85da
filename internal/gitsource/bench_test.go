package gitsource_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/gitsource"
)

// BenchmarkGitSource measures, in one run, against serving the same files
// from a directory (catalog.OpenDir, the cost of `skillport serve DIR`):
//
//   - cold-x: a start with an empty cache, cloning a 10,000-skill repository
//     from git http-backend on loopback and building its catalog (target ≤ 1.5);
//   - warm-x: a restart with the mirror in place (target ≤ 1.2);
//   - reload-x: a new commit touching one skill, fetched and rebuilt, as a
//     fraction of the cold start (target ≤ 0.05); splice-ms is the part of
//     it spent splicing the changed skill into the catalog;
//   - fetch-floor: the same commit fetched by the git binary into a bare
//     clone (`git fetch`, client and server), the least any reload from
//     this server costs: fetch-floor-x is it as a fraction of the cold
//     start, reload/fetch-floor our reload against it.
//
// Each figure is the median of -benchtime rounds (use -benchtime=3x). The
// same ratios of CPU time (this process and the git servers it runs, where
// the platform reports children's usage) are printed as *-cpu-x: on a
// machine shared with other work they move less than wall times do; the
// git servers' share is printed as *-server-cpu-ms.
func BenchmarkGitSource(b *testing.B) {
	const n = 10000
	r := newRemote(b)
	importSkills(b, r, n, "first")
	// fast-import writes its objects without deltas, and git then
	// searches deltas for all 40,000 objects again on every clone (about
	// 450 ms of the server's CPU each, counted in the ratios below). A
	// hosted repository is repacked, its deltas reused and its objects
	// counted with a reachability bitmap: pack it as they are.
	git(b, r.bare, "repack", "-q", "-a", "-d", "-f", "-b")
	dir := filepath.Join(b.TempDir(), "skills")
	git(b, r.work, "--work-tree", mkdir(b, dir), "checkout", "-q", "-f", "main", "--", ".")
	srv := serveHTTPGit(b, r.root, "", "")
	sp, err := gitsource.ParseSpec("git+" + srv.URL + "/repo.git@main")
	if err != nil {
		b.Fatal(err)
	}
	quiet := newLogger(io.Discard)
	openGit := func(cache string) *gitsource.Source {
		s, err := gitsource.Open(context.Background(), sp, &gitsource.Options{CacheDir: cache, Credentials: &gitsource.Credentials{}, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if got := s.Catalog().Stats().Skills; got != n {
			b.Fatalf("%d skills", got)
		}
		return s
	}
	floorRepo := filepath.Join(b.TempDir(), "floor.git")
	git(b, filepath.Dir(floorRepo), "clone", "-q", "--bare", srv.URL+"/repo.git", floorRepo)
	var tDir, tCold, tWarm, tReload, tSplice, tFloor []time.Duration
	var cDir, cCold, cWarm, cReload, cFloor []time.Duration
	var sCold, sWarm, sReload []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start, cpu := time.Now(), cputime.Total()
		c, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
		tDir, cDir = append(tDir, time.Since(start)), append(cDir, cputime.Total()-cpu)
		if err != nil || c.Stats().Skills != n {
			b.Fatalf("directory: %v", err)
		}

		cache := b.TempDir()
		start, cpu, srv := time.Now(), cputime.Total(), cputime.Children()
		openGit(cache)
		tCold, cCold = append(tCold, time.Since(start)), append(cCold, cputime.Total()-cpu)
		sCold = append(sCold, cputime.Children()-srv)

		start, cpu, srv = time.Now(), cputime.Total(), cputime.Children()
		s := openGit(cache)
		tWarm, cWarm = append(tWarm, time.Since(start)), append(cWarm, cputime.Total()-cpu)
		sWarm = append(sWarm, cputime.Children()-srv)

		b.StopTimer()
		name := fmt.Sprintf("s%05d", i)
		r.commit("touch", map[string]string{name + "/SKILL.md": skillMD(name, fmt.Sprintf("round %d", i))})
		r.push("main")
		b.StartTimer()
		start, cpu, srv = time.Now(), cputime.Total(), cputime.Children()
		next, changed, err := s.Update(context.Background())
		tReload, cReload = append(tReload, time.Since(start)), append(cReload, cputime.Total()-cpu)
		sReload = append(sReload, cputime.Children()-srv)
		tSplice = append(tSplice, next.Stats().Duration)
		if err != nil || !changed || next.Stats().Hashed != 1 {
			b.Fatalf("Update: %v, %v, hashed %d", changed, err, next.Stats().Hashed)
		}

		start, cpu = time.Now(), cputime.Total()
		git(b, floorRepo, "fetch", "-q", "origin", "+refs/heads/main:refs/heads/main")
		tFloor, cFloor = append(tFloor, time.Since(start)), append(cFloor, cputime.Total()-cpu)
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	b.ReportMetric(med(tDir)/1e6, "dir-ms")
	b.ReportMetric(med(tCold)/1e6, "cold-ms")
	b.ReportMetric(med(tWarm)/1e6, "warm-ms")
	b.ReportMetric(med(tReload)/1e6, "reload-ms")
	b.ReportMetric(med(tSplice)/1e6, "splice-ms")
	b.ReportMetric(med(tCold)/med(tDir), "cold-x")
	b.ReportMetric(med(tWarm)/med(tDir), "warm-x")
	b.ReportMetric(med(tReload)/med(tCold), "reload-x")
	b.ReportMetric(med(tFloor)/1e6, "fetch-floor-ms")
	b.ReportMetric(med(tFloor)/med(tCold), "fetch-floor-x")
	b.ReportMetric(med(tReload)/med(tFloor), "reload/fetch-floor")
	if med(cDir) > 0 {
		b.ReportMetric(med(cDir)/1e6, "dir-cpu-ms")
		b.ReportMetric(med(cCold)/1e6, "cold-cpu-ms")
		b.ReportMetric(med(cWarm)/1e6, "warm-cpu-ms")
		b.ReportMetric(med(cReload)/1e6, "reload-cpu-ms")
		b.ReportMetric(med(cCold)/med(cDir), "cold-cpu-x")
		b.ReportMetric(med(cWarm)/med(cDir), "warm-cpu-x")
		b.ReportMetric(med(cReload)/med(cCold), "reload-cpu-x")
		b.ReportMetric(med(cFloor)/1e6, "fetch-floor-cpu-ms")
		b.ReportMetric(med(cFloor)/med(cCold), "fetch-floor-cpu-x")
		b.ReportMetric(med(sCold)/1e6, "cold-server-cpu-ms")
		b.ReportMetric(med(sWarm)/1e6, "warm-server-cpu-ms")
		b.ReportMetric(med(sReload)/1e6, "reload-server-cpu-ms")
	}
}

func mkdir(b *testing.B, dir string) string {
	b.Helper()
	if err := osMkdirAll(dir); err != nil {
		b.Fatal(err)
	}
	return dir
}
