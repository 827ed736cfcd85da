package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// ErrNoDiscovery is wrapped, with [ErrDiscovery], when the site has no
// discovery document: it answered with an MCP endpoint's event stream or
// an error status (an MCP server at its root answers a GET with 405), or
// could not be reached. The address may be an MCP endpoint itself, a
// server answering at its root: try that next.
var ErrNoDiscovery = errors.New("no discovery document")

// IsSiteURL reports whether u names a web site rather than an MCP
// endpoint: an http(s) URL with no path (or "/"), as a person types a
// domain name. Hosts start from the site's discovery document then.
func IsSiteURL(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != "" &&
		(pu.Path == "" || pu.Path == "/") && pu.RawQuery == "" && pu.Fragment == ""
}

// ReadSite reads the Agent Skills discovery document of site
// (site/.well-known/agent-skills/index.json). The request carries
// headers. It fails, naming the URL and what to do, when the document is
// missing, larger than MaxDiscoveryBytes or not a 0.2.0 discovery
// document.
func ReadSite(ctx context.Context, client *http.Client, site string, headers map[string]string) (*Site, error) {
	base, err := url.Parse(site)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an http(s) URL", ErrDiscovery, site)
	}
	doc := base.ResolveReference(&url.URL{Path: wire.WellKnownPath})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDiscovery, doc, err)
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
		return nil, fmt.Errorf("%w: %w: %s: %v", ErrDiscovery, ErrNoDiscovery, doc, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %w: %s: %s; give the server's MCP endpoint URL instead (e.g. %s)", ErrDiscovery, ErrNoDiscovery, doc, resp.Status,
			base.ResolveReference(&url.URL{Path: "/mcp"}))
	}
	// An MCP endpoint at the site's root may answer any GET with an event
	// stream that never ends: that is no document, and is not read.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return nil, fmt.Errorf("%w: %w: %s is an event stream", ErrDiscovery, ErrNoDiscovery, doc)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDiscoveryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDiscovery, doc, err)
	}
	if len(body) > MaxDiscoveryBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes; give the server's MCP endpoint URL instead", ErrDiscovery, doc, MaxDiscoveryBytes)
	}
	sum := sha256.Sum256(body)
	s := &Site{URL: doc, Digest: "sha256:" + hex.EncodeToString(sum[:])}
	if err := json.Unmarshal(body, &s.Doc); err != nil {
		return nil, fmt.Errorf("%w: %s is not a discovery document: %v", ErrDiscovery, doc, err)
	}
	if s.Doc.Schema != wire.IndexSchema {
		return nil, fmt.Errorf("%w: %s: $schema %q, want %q", ErrDiscovery, doc, s.Doc.Schema, wire.IndexSchema)
	}
	return s, nil
}

// MCPEndpoint returns the MCP endpoint the document names, resolved
// against its URL, or "" when it names none (read the skills with
// [FetchSite] then). It fails when the endpoint is not an http(s) URL, or
// when headers are given and the endpoint is on another origin: headers
// given for a site are not sent elsewhere.
func (s *Site) MCPEndpoint(headers map[string]string) (string, error) {
	if s.Doc.MCP == "" {
		return "", nil
	}
	m, err := s.URL.Parse(s.Doc.MCP)
	if err != nil || (m.Scheme != "http" && m.Scheme != "https") || m.Host == "" {
		return "", fmt.Errorf("%w: %s: \"mcp\" %q is not an http(s) URL", ErrDiscovery, s.URL, s.Doc.MCP)
	}
	if len(headers) > 0 && (m.Scheme != s.URL.Scheme || m.Host != s.URL.Host) {
		return "", fmt.Errorf("%w: %s points to the MCP endpoint %s on another origin; the headers given for %s are not sent there: give that URL directly", ErrDiscovery, s.URL, m, s.URL.Host)
	}
	return m.String(), nil
}

// DiscoverMCP reads the discovery document of site ([ReadSite]) and
// returns the MCP endpoint it points to ([Site.MCPEndpoint]); a document
// that names none is an error.
func DiscoverMCP(ctx context.Context, client *http.Client, site string, headers map[string]string) (string, error) {
	s, err := ReadSite(ctx, client, site, headers)
	if err != nil {
		return "", err
	}
	m, err := s.MCPEndpoint(headers)
	if err == nil && m == "" {
		err = fmt.Errorf("%w: %s lists %d skills but names no MCP endpoint (\"mcp\"); read them with FetchSite", ErrDiscovery, s.URL, len(s.Doc.Skills))
	}
	return m, err
}
