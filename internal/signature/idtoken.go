package signature

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The environment variables an ID token for keyless signing is found
// in, as cosign reads them: a token itself, or GitHub Actions' request
// for one (set in jobs with "permissions: id-token: write").
const (
	EnvIDToken           = "SIGSTORE_ID_TOKEN"
	EnvActionsRequestURL = "ACTIONS_ID_TOKEN_REQUEST_URL"
	EnvActionsRequestTok = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// MaxIDTokenBytes bounds an ID token read from a file, the environment
// or GitHub's token endpoint.
const MaxIDTokenBytes = 64 << 10

// IDTokenOffered reports whether the environment offers an ID token
// (getenv is os.Getenv in production).
func IDTokenOffered(getenv func(string) string) bool {
	return getenv(EnvIDToken) != "" || (getenv(EnvActionsRequestURL) != "" && getenv(EnvActionsRequestTok) != "")
}

// EnvIDTokenSource gets the environment's ID token: $SIGSTORE_ID_TOKEN,
// else one requested from GitHub Actions for the audience "sigstore".
// It returns the token and where it came from, for messages; "" and no
// error when the environment offers none.
func EnvIDTokenSource(ctx context.Context, getenv func(string) string, timeout time.Duration) (token, from string, err error) {
	if t := strings.TrimSpace(getenv(EnvIDToken)); t != "" {
		if len(t) > MaxIDTokenBytes {
			return "", "", fmt.Errorf("$%s is over the %d-byte limit of an ID token", EnvIDToken, MaxIDTokenBytes)
		}
		return t, "$" + EnvIDToken, nil
	}
	reqURL, reqTok := getenv(EnvActionsRequestURL), getenv(EnvActionsRequestTok)
	if reqURL == "" || reqTok == "" {
		return "", "", nil
	}
	t, err := actionsIDToken(ctx, reqURL, reqTok, timeout)
	if err != nil {
		return "", "", err
	}
	return t, "GitHub Actions ($" + EnvActionsRequestURL + ")", nil
}

// actionsIDToken asks GitHub Actions' token endpoint for an ID token whose
// audience is Fulcio's.
func actionsIDToken(ctx context.Context, reqURL, reqTok string, timeout time.Duration) (string, error) {
	u, err := url.Parse(reqURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("$%s is not an http(s) URL", EnvActionsRequestURL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return "", fmt.Errorf("$%s would send $%s over plain HTTP to %s; it must be https", EnvActionsRequestURL, EnvActionsRequestTok, u.Host)
	}
	q := u.Query()
	q.Set("audience", FulcioAudience)
	u.RawQuery = q.Encode()
	if timeout <= 0 {
		timeout = DefaultKeylessTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+reqTok)
	req.Header.Set("Accept", "application/json")
	where := "GitHub Actions' ID token endpoint at " + u.Host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if msg := unreachable(err, "$"+EnvActionsRequestURL, timeout); msg != "" {
			return "", fmt.Errorf("%s: %s", where, msg)
		}
		return "", fmt.Errorf("%s: %s", where, oneLine(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxIDTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: %v", where, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s (%s); the job needs \"permissions: id-token: write\"", where, resp.Status, oneLine(string(body)))
	}
	if len(body) > MaxIDTokenBytes {
		return "", fmt.Errorf("%s sent over %d bytes", where, MaxIDTokenBytes)
	}
	var v struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
		return "", fmt.Errorf("%s sent no token (want JSON {\"value\": TOKEN})", where)
	}
	return v.Value, nil
}
