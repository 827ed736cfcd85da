package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/skillport/skillport/wire"
)

// MaxDiscoveryBytes bounds the discovery document a host reads: a longer
// one is refused rather than buffered.
const MaxDiscoveryBytes = 4 << 20

// ErrDiscovery is wrapped by every error of [DiscoverMCP].
var ErrDiscovery = errors.New("agent skills discovery")

// ErrNoDiscovery is wrapped, with [ErrDiscovery], when the site's answer is
// an MCP endpoint's event stream rather than a document: the address is an
// MCP endpoint itself, a server answering at its root.
var ErrNoDiscovery = errors.New("no discovery document")

// IsSiteURL reports whether u names a web site rather than an MCP
// endpoint: an http(s) URL with no path (or "/"), as a person types a
// domain name. Hosts start from the site's discovery document then.
func IsSiteURL(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != "" &&
		(pu.Path == "" || pu.Path == "/") && pu.RawQuery == "" && pu.Fragment == ""
}

// DiscoverMCP reads the Agent Skills discovery document of site
// (site/.well-known/agent-skills/index.json) and returns the MCP endpoint
// it points to, resolved against the document's URL. The request carries
// headers. It fails, naming the URL and what to do, when the document is
// missing, larger than MaxDiscoveryBytes, not a discovery document, or
// names no http(s) MCP endpoint.
func DiscoverMCP(ctx context.Context, client *http.Client, site string, headers map[string]string) (string, error) {
	base, err := url.Parse(site)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("%w: %q is not an http(s) URL", ErrDiscovery, site)
	}
	doc := base.ResolveReference(&url.URL{Path: wire.WellKnownPath})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrDiscovery, doc, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrDiscovery, doc, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s: %s; give the server's MCP endpoint URL instead (e.g. %s)", ErrDiscovery, doc, resp.Status,
			base.ResolveReference(&url.URL{Path: "/mcp"}))
	}
	// An MCP endpoint at the site's root may answer any GET with an event
	// stream that never ends: that is no document, and is not read.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return "", fmt.Errorf("%w: %w: %s is an event stream", ErrDiscovery, ErrNoDiscovery, doc)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDiscoveryBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrDiscovery, doc, err)
	}
	if len(body) > MaxDiscoveryBytes {
		return "", fmt.Errorf("%w: %s is larger than %d bytes; give the server's MCP endpoint URL instead", ErrDiscovery, doc, MaxDiscoveryBytes)
	}
	var d wire.Discovery
	if err := json.Unmarshal(body, &d); err != nil {
		return "", fmt.Errorf("%w: %s is not a discovery document: %v", ErrDiscovery, doc, err)
	}
	if d.Schema != wire.IndexSchema {
		return "", fmt.Errorf("%w: %s: $schema %q, want %q", ErrDiscovery, doc, d.Schema, wire.IndexSchema)
	}
	if d.MCP == "" {
		return "", fmt.Errorf("%w: %s lists %d skills but names no MCP endpoint (\"mcp\"); skillport reads skills over MCP: give the server's MCP endpoint URL", ErrDiscovery, doc, len(d.Skills))
	}
	m, err := doc.Parse(d.MCP)
	if err != nil || (m.Scheme != "http" && m.Scheme != "https") || m.Host == "" {
		return "", fmt.Errorf("%w: %s: \"mcp\" %q is not an http(s) URL", ErrDiscovery, doc, d.MCP)
	}
	if len(headers) > 0 && (m.Scheme != doc.Scheme || m.Host != doc.Host) {
		return "", fmt.Errorf("%w: %s points to the MCP endpoint %s on another origin; the headers given for %s are not sent there: give that URL directly", ErrDiscovery, doc, m, base.Host)
	}
	return m.String(), nil
}
