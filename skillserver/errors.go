package skillserver

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/skill"
)

// MaxURILength is the longest URI the server looks up; longer ones are
// rejected without a lookup, so a huge URI costs nothing to refuse.
const MaxURILength = skill.MaxURILength

// invalidParams builds a -32602 error whose data carries the URI as received
// (cut to MaxURILength bytes, so that a huge URI is not echoed back whole).
func invalidParams(uri, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: uriData(uri)}
}

// internalError builds a -32603 error naming the URI, never a filesystem path.
func internalError(uri, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...), Data: uriData(uri)}
}

func uriData(uri string) json.RawMessage {
	d := struct {
		URI       string `json:"uri"`
		Truncated bool   `json:"truncated,omitempty"`
	}{URI: uri}
	if len(uri) > MaxURILength {
		d.URI, d.Truncated = uri[:MaxURILength], true
	}
	b, _ := json.Marshal(d)
	return b
}

// show renders a URI for an error message: as is when it is short and
// printable, quoted and cut otherwise, so that control characters and huge
// inputs never reach a log line or a model verbatim.
func show(uri string) string {
	const max = 200
	printable := utf8.ValidString(uri)
	for _, r := range uri {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == ' ' || r == '"' {
			printable = false
			break
		}
	}
	if printable && len(uri) <= max && uri != "" {
		return uri
	}
	if len(uri) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(uri[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", uri[:cut], len(uri))
	}
	return fmt.Sprintf("%q", uri)
}

// diagnose explains why a URI cannot name anything this server publishes,
// or returns "" for a well-formed URI that is simply not served. It is used
// only to word error messages: lookups are exact string matches against the
// snapshot and never depend on parsing.
func diagnose(uri string, schemes []string) string {
	switch {
	case uri == "":
		return "the uri parameter is empty"
	case len(uri) > MaxURILength:
		return fmt.Sprintf("it is longer than %d bytes", MaxURILength)
	case !utf8.ValidString(uri):
		return "it is not valid UTF-8"
	}
	for _, r := range uri {
		if r < 0x20 || r == 0x7f {
			return "it contains a control character"
		}
	}
	if strings.ContainsRune(uri, '\\') {
		return "it contains a backslash; URIs use \"/\""
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		if strings.HasPrefix(uri, "/") {
			return "it is an absolute path, not a URI; " + expect(schemes)
		}
		return "it is not an absolute URI; " + expect(schemes)
	}
	known := false
	for _, s := range schemes {
		if scheme == s {
			known = true
		}
	}
	if !known {
		return fmt.Sprintf("its scheme is %q; %s", scheme, expect(schemes))
	}
	if strings.ContainsAny(rest, "?#") {
		return "it has a query or fragment; skill URIs have neither"
	}
	authority, _, _ := strings.Cut(rest, "/")
	switch {
	case authority == "":
		return "its authority (first segment) is empty"
	case strings.Contains(authority, "@"):
		return "it has userinfo (\"@\") in the authority"
	case strings.Contains(authority, ":"):
		return "it has a port in the authority"
	}
	if strings.HasSuffix(rest, "/") {
		return "it ends with \"/\"; directory URIs have no trailing slash"
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" {
			return "it has an empty path segment (\"//\")"
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Sprintf("segment %q has an invalid percent-escape", seg)
		}
		switch {
		case dec == "." || dec == "..":
			return "it has a dot segment (\".\" or \"..\", possibly percent-encoded); skill URIs never do"
		case strings.ContainsAny(dec, "/\\"):
			return "a segment encodes a separator (%2F or %5C)"
		case strings.ContainsRune(dec, 0):
			return "a segment encodes a NUL byte"
		}
	}
	return ""
}

func expect(schemes []string) string {
	parts := make([]string, len(schemes))
	for i, s := range schemes {
		parts[i] = s + "://"
	}
	return "this server serves " + strings.Join(parts, " and ") + " URIs"
}

// because appends a diagnosis to a message, if there is one.
func because(uri string, schemes []string) string {
	if d := diagnose(uri, schemes); d != "" {
		return " (" + d + ")"
	}
	return ""
}
