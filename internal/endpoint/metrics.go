package endpoint

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillport/skillport/internal/budget"
	"github.com/skillport/skillport/internal/published"
)

// metrics are the endpoint's Prometheus collectors. Every label takes its
// values from a fixed set, so that no client can grow the exposition.
type metrics struct {
	requests *prometheus.CounterVec   // method, rpc_method, result
	latency  *prometheus.HistogramVec // method, rpc_method
	inFlight prometheus.Gauge
	conns    prometheus.Gauge
	refused  *prometheus.CounterVec // reason
	sessions *prometheus.CounterVec // event: opened, closed

	snapMu   sync.Mutex
	snapTime time.Time
	snapSize [3]float64 // skills, files, bytes
}

// rpcMethods are the JSON-RPC methods counted under their own name; any
// other method is counted as "other".
var rpcMethods = map[string]bool{}

func init() {
	for _, m := range []string{
		"initialize", "ping", "completion/complete", "logging/setLevel",
		"tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/read", "resources/templates/list",
		"resources/subscribe", "resources/unsubscribe", "resources/directory/read",
		"skills/list", "skills/get", "skills/execute",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed",
	} {
		rpcMethods[m] = true
	}
}

// methodLabel maps a request's JSON-RPC method to its metric label: ""
// is a client's response (e.g. to an elicitation).
func methodLabel(m string) string {
	switch {
	case m == "":
		return "response"
	case rpcMethods[m]:
		return m
	}
	return "other"
}

func httpMethodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return m
	}
	return "other"
}

func newMetrics(reg prometheus.Registerer, src published.Source, sessions func() int, b *budget.Budget) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillport_http_requests_total",
			Help: "HTTP requests by HTTP method, JSON-RPC method and result (ok, rpc_error, client_error, server_error, refused).",
		}, []string{"method", "rpc_method", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillport_http_request_duration_seconds",
			Help:    "Time from a request's headers to the end of its response, by HTTP and JSON-RPC method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "rpc_method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skillport_http_requests_in_flight",
			Help: "HTTP requests being handled, including open SSE streams.",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skillport_http_connections_open",
			Help: "Accepted connections not yet closed.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillport_http_refused_total",
			Help: "Requests and connections refused by a limit, by reason; idle_yielded counts idle connections closed to admit a new one at the connection limit.",
		}, []string{"reason"}),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillport_mcp_sessions_total",
			Help: "MCP sessions opened (initialize answered with a session id) and closed by the client (DELETE).",
		}, []string{"event"}),
	}
	cs := []prometheus.Collector{m.requests, m.latency, m.inFlight, m.conns, m.refused, m.sessions}
	if b != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skillport_response_budget_bytes_in_use",
			Help: "Bytes of the server's budget for large answers reserved now; the budget is Options.ResponseBudget.",
		}, func() float64 { return float64(b.InUse()) }))
	}
	if sessions != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skillport_mcp_sessions_active",
			Help: "MCP sessions held now (older protocol revisions; idle ones expire).",
		}, func() float64 { return float64(sessions()) }))
	}
	if src != nil {
		m.snapshotChanged(src.Snapshot())
		src.OnChange(func(_, snap published.Snapshot) { m.snapshotChanged(snap) })
		gauge := func(name, help string, f func() float64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
		}
		cs = append(cs,
			gauge("skillport_snapshot_age_seconds", "Time since the served snapshot was installed.", func() float64 {
				m.snapMu.Lock()
				defer m.snapMu.Unlock()
				return time.Since(m.snapTime).Seconds()
			}),
			gauge("skillport_snapshot_skills", "Skills in the served snapshot.", m.snapshotSize(0)),
			gauge("skillport_snapshot_files", "Files in the served snapshot.", m.snapshotSize(1)),
			gauge("skillport_snapshot_bytes", "Total size of the files in the served snapshot.", m.snapshotSize(2)),
		)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"origin", "body_too_large", "body_budget", "batch", "slow_body", "body_read", "session_requests", "connection_limit", "idle_yielded", "host"} {
		m.refused.WithLabelValues(r)
	}
	return m, nil
}

func (m *metrics) snapshotChanged(snap published.Snapshot) {
	var size [3]float64
	if snap != nil {
		files := snap.Files()
		size[0], size[1] = float64(len(snap.Skills())), float64(len(files))
		for _, f := range files {
			size[2] += float64(f.Size)
		}
	}
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.snapTime, m.snapSize = time.Now(), size
}

func (m *metrics) snapshotSize(i int) func() float64 {
	return func() float64 {
		m.snapMu.Lock()
		defer m.snapMu.Unlock()
		return m.snapSize[i]
	}
}

// observe counts and logs a finished request. The log line carries no
// header values, session ids or bodies.
func (e *Endpoint) observe(r *http.Request, rec *recorder, d time.Duration) {
	method := httpMethodLabel(r.Method)
	result := rec.result()
	e.m.requests.WithLabelValues(method, rec.rpcMethod, result).Inc()
	e.m.latency.WithLabelValues(method, rec.rpcMethod).Observe(d.Seconds())
	if rec.refused != "" {
		e.m.refused.WithLabelValues(rec.refused).Inc()
	}
	if rec.status < 300 && rec.status >= 200 {
		switch {
		case rec.rpcMethod == "initialize" && rec.Header().Get("Mcp-Session-Id") != "":
			e.m.sessions.WithLabelValues("opened").Inc()
		case r.Method == http.MethodDelete:
			e.m.sessions.WithLabelValues("closed").Inc()
		}
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("path", pathLabel(r)),
		slog.String("rpc_method", rec.rpcMethod),
		slog.Int("status", rec.status),
		slog.String("result", result),
		slog.Duration("duration", d),
		slog.Int64("bytes_in", rec.bytesIn),
		slog.Int64("bytes_out", rec.bytesOut),
		slog.String("remote", r.RemoteAddr),
	}
	if rec.refused != "" {
		attrs = append(attrs, slog.String("refused", rec.refused))
	}
	e.log.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
}

// pathLabel is the pattern that routed the request (its path part), so
// that the access log holds only the paths the endpoint serves, never
// arbitrary text from a request line.
func pathLabel(r *http.Request) string {
	if r.Pattern == "" {
		return "other"
	}
	_, path, ok := strings.Cut(r.Pattern, " ")
	if !ok {
		path = r.Pattern
	}
	return path
}
