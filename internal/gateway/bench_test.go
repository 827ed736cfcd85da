package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// vocabulary for synthetic skills: realistic enough that queries hit a few
// hundred documents each, as in a large team catalog.
var vocabulary = strings.Fields(`pdf form fill extract text table merge split document review code change
security readability diff pull request commit branch rebase merge conflict test coverage unit integration
deploy release rollback kubernetes helm docker image container registry terraform cloud bucket storage
database migration schema index query postgres mysql redis cache latency profile benchmark memory cpu
refund invoice billing customer support ticket email reply template escalation policy compliance audit
log metric trace alert incident postmortem oncall runbook dashboard grafana prometheus slack notify
design figma component accessibility color typography layout responsive mobile android ios swift kotlin
python javascript typescript golang rust java build lint format package dependency upgrade vulnerability
translate localize language summary meeting notes calendar schedule plan roadmap spec requirement story
spreadsheet excel csv chart report analytics sql dashboard forecast budget finance tax payroll contract
legal privacy gdpr consent data retention backup restore archive compress encrypt sign certificate key`)

func synthDocs(n int, rng *rand.Rand) []gateway.Doc {
	docs := make([]gateway.Doc, n)
	word := func() string { return vocabulary[rng.IntN(len(vocabulary))] }
	for i := range docs {
		name := fmt.Sprintf("%s-%s-%d", word(), word(), i)
		var d strings.Builder
		for j := range 12 + rng.IntN(20) {
			if j > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(word())
		}
		docs[i] = gateway.Doc{Name: name, Description: d.String()}
	}
	return docs
}

var benchQueries = []string{"fill pdf form", "review pull request", "refund customer invoice", "deploy kubernetes helm release",
	"database migration postgres", "incident postmortem runbook", "translate document", "csv report chart", "rotate certificate key", "zzz-no-match"}

// BenchmarkSearch10k measures search_skills over a 10,000-skill catalog:
// the BM25 query and the rendering of the results, as the tool does them,
// with p50 and p99 latency and the memory the index holds.
func BenchmarkSearch10k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	docs := synthDocs(10000, rng)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix := gateway.BuildIndex(docs)
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ix)

	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		ix.Search(benchQueries[i%len(benchQueries)], gateway.DefaultSearchLimit)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "index-MiB")
	b.ReportMetric(float64(build.Milliseconds()), "build-ms")
}

// BenchmarkSearchSkillsTool10k is the whole tool call in process: a
// gateway whose upstream lists 10,000 skills, search_skills called through
// a go-sdk client (index built lazily by the first call, outside the timer),
// against a bare go-sdk server in the same run whose one tool answers the
// same text, precomputed, over the same kind of transport: what the gateway
// adds to a tool call (search, rendering, its middleware). Calls alternate,
// so that load on the machine weighs on both alike. Target: ratio <= 2.
func BenchmarkSearchSkillsTool10k(b *testing.B) {
	f := newFake()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range synthDocs(10000, rng) {
		f.add(d.Name, d.Description, "Body.", nil)
	}
	g := newGateway(b, []host.Origin{f.origin(b, "big")}, &host.Options{Approver: &allow{}, MaxEntries: 20000, MaxPages: 10}, nil)
	<-g.Ready()
	cs := clientOf(b, g, nil)
	call(b, cs, "search_skills", map[string]any{"query": "warm up"})

	// The bare server answers each query with what the gateway answers.
	answers := map[string]string{}
	for _, q := range benchQueries {
		answers[q], _ = call(b, cs, "search_skills", map[string]any{"query": q})
	}
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare"}, nil)
	bare.AddTool(&mcp.Tool{Name: host.ToolSearchSkills, InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Query string }
			json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answers[a.Query]}}}, nil
		})
	bs := bareClient(b, bare)
	call(b, bs, "search_skills", map[string]any{"query": "warm up"})

	var lat, bareLat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		args := map[string]any{"query": benchQueries[i%len(benchQueries)]}
		t0 := time.Now()
		out, isErr := call(b, cs, "search_skills", args)
		lat = append(lat, time.Since(t0))
		if isErr {
			b.Fatal(out)
		}
		b.StopTimer()
		t0 = time.Now()
		if got, _ := call(b, bs, "search_skills", args); got != out {
			b.Fatalf("bare answer differs")
		}
		bareLat = append(bareLat, time.Since(t0))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(bareLat)
	p50, bare50 := lat[len(lat)/2], bareLat[len(bareLat)/2]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(bare50.Microseconds()), "bare-p50-µs")
	b.ReportMetric(float64(p50)/float64(bare50), "ratio")
	if f.readCount() != 0 {
		b.Fatalf("search fetched %d files", f.readCount())
	}
}

// bareClient connects a go-sdk client to s in process.
func bareClient(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkStartToFirstToolsList10 measures a gateway's start with 10
// upstreams (our server, in process, each serving the example skills): from
// New to the client's first tools/list answer, handshake included.
func BenchmarkStartToFirstToolsList10(b *testing.B) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		var origins []host.Origin
		var cancels []context.CancelFunc
		for i := range 10 {
			s, _, err := skillserver.New(&mcp.Implementation{Name: "up"}, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
			if err != nil {
				b.Fatal(err)
			}
			ct, st := mcp.NewInMemoryTransports()
			sctx, cancel := context.WithCancel(ctx)
			cancels = append(cancels, cancel)
			go s.Run(sctx, st)
			origins = append(origins, host.Origin{Label: fmt.Sprintf("up%d", i), Transport: ct})
		}
		b.StartTimer()

		g, err := gateway.New(origins, &host.Options{Logger: discard, Approver: &allow{}}, &gateway.Options{Logger: discard})
		if err != nil {
			b.Fatal(err)
		}
		g.Start(ctx)
		ct, st := mcp.NewInMemoryTransports()
		ss, err := g.Server().Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 4 {
			b.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
		}

		b.StopTimer()
		cs.Close()
		ss.Close()
		g.Close()
		for _, c := range cancels {
			c()
		}
		b.StartTimer()
	}
}
