package regapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
)

// maxAnswerBytes bounds an answer the client reads whole (a versions list,
// a publish result, an error).
const maxAnswerBytes = 16 << 20

// Client calls the API of the server at Server, a URL of the server
// (https://skills.example.com/mcp, the URL signed in to with auth login):
// the API is at its origin, under [Prefix].
type Client struct {
	Server string
	HTTP   *http.Client
	// Token returns the bearer token to send, "" for none.
	Token func(context.Context) (string, error)
	// Authorize, when set, answers a 401 (a refresh, the client
	// credentials grant, or an error saying how to sign in); the request
	// is then sent once more.
	Authorize func(ctx context.Context, req *http.Request, resp *http.Response) error
}

// Error is an answer of the API that is not a success.
type Error struct {
	Status int
	Body   ErrorBody
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", strings.TrimSuffix(e.Body.Error, "\n"), e.Status)
}

func (c *Client) url(route string, q url.Values) (string, error) {
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL of a skillport server", c.Server)
	}
	u.Path, u.RawQuery, u.Fragment = Prefix+route, q.Encode(), ""
	return u.String(), nil
}

// do sends a request, authorizing once on a 401, and returns a 2xx
// answer; anything else is an [*Error].
func (c *Client) do(ctx context.Context, method, route string, q url.Values, body func() (io.ReadCloser, int64, error), contentType string) (*http.Response, error) {
	u, err := c.url(route, q)
	if err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, err
		}
		if body != nil {
			rc, n, err := body()
			if err != nil {
				return nil, err
			}
			req.Body, req.ContentLength = rc, n
			req.Header.Set("Content-Type", contentType)
		}
		if c.Token != nil {
			tok, err := c.Token(ctx)
			if err != nil {
				return nil, err
			}
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 && c.Authorize != nil {
			err := c.Authorize(ctx, req, resp)
			resp.Body.Close()
			if err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		defer resp.Body.Close()
		return nil, answerError(resp)
	}
}

// answerError reads a refusal: the API's {"error": ...}, or the JSON-RPC
// error the token check answers with, or the status alone.
func answerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	e := &Error{Status: resp.StatusCode}
	var raw struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &raw) == nil && len(raw.Error) > 0 {
		if json.Unmarshal(data, &e.Body) != nil {
			var rpc struct {
				Message string `json:"message"`
			}
			json.Unmarshal(raw.Error, &rpc)
			e.Body.Error = rpc.Message
		}
	}
	if e.Body.Error == "" {
		e.Body.Error = "the server answered " + resp.Status
		if resp.StatusCode == http.StatusNotFound {
			e.Body.Error += "; is it a skillport serve --accept-publish replica?"
		}
	}
	return e
}

func decodeAnswer(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(v); err != nil {
		return fmt.Errorf("the server's answer is not the JSON expected: %v", err)
	}
	return nil
}

// Publish sends cat's skills and their signature bundles (see
// [WriteArchive]) to be published as namespace ns, recording commit with
// the new versions. cat's skills are named as the registry will serve
// them (catalog.Options.Prefix ns), so that their bundles bind.
func (c *Client) Publish(ctx context.Context, cat *catalog.Catalog, ns, commit string, dotfiles bool) (*registry.PublishResult, error) {
	// The archive is written once, to a file, so that it can be sent again
	// after a 401 without holding it in memory.
	f, err := os.CreateTemp("", "skillport-publish-*.tar.gz")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := WriteArchive(f, cat); err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	q := url.Values{"namespace": {ns}}
	if commit != "" {
		q.Set("commit", commit)
	}
	if dotfiles {
		q.Set("dotfiles", "1")
	}
	resp, err := c.do(ctx, http.MethodPost, "publish", q, func() (io.ReadCloser, int64, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, 0, err
		}
		return io.NopCloser(f), size, nil
	}, "application/gzip")
	if err != nil {
		return nil, err
	}
	var res registry.PublishResult
	return &res, decodeAnswer(resp, &res)
}

func jsonBody(v any) func() (io.ReadCloser, int64, error) {
	data, _ := json.Marshal(v)
	return func() (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
}

// Change asks for action (rollback, yank, approve, reject) and returns the
// skill's versions after it.
func (c *Client) Change(ctx context.Context, action string, ch Change) ([]registry.Version, error) {
	resp, err := c.do(ctx, http.MethodPost, action, nil, jsonBody(ch), "application/json")
	if err != nil {
		return nil, err
	}
	var vs []registry.Version
	return vs, decodeAnswer(resp, &vs)
}

// Versions lists a skill's versions.
func (c *Client) Versions(ctx context.Context, skill string) ([]registry.Version, error) {
	resp, err := c.do(ctx, http.MethodGet, "versions", url.Values{"skill": {skill}}, nil, "")
	if err != nil {
		return nil, err
	}
	var vs []registry.Version
	return vs, decodeAnswer(resp, &vs)
}

// SetReviewMode sets the review mode of the namespaces under ns.
func (c *Client) SetReviewMode(ctx context.Context, ns, mode string) error {
	resp, err := c.do(ctx, http.MethodPost, "review-mode", nil, jsonBody(ModeChange{Namespace: ns, Mode: mode}), "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// maxAuditLine bounds one line of the audit log the client reads.
const maxAuditLine = 1 << 20

// Audit calls fn with each row of the audit log recorded at or after
// since, as the server streams them.
func (c *Client) Audit(ctx context.Context, since time.Time, fn func(registry.AuditRecord) error) error {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339))
	}
	resp, err := c.do(ctx, http.MethodGet, "audit", q, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxAuditLine)
	for sc.Scan() {
		var rec registry.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("the server's audit log is not JSON lines: %v", err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return errors.Join(errors.New("the audit log ended early"), err)
	}
	return nil
}
