package gitsource

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// WebhookPath is where `skillport serve --http` receives push webhooks.
const WebhookPath = "/hooks/git"

// MaxWebhookBody bounds a webhook request body; larger ones get 413.
const MaxWebhookBody = 4 << 20

// ErrNoSecret is returned by [Webhook] without a secret: an unauthenticated
// webhook would let anyone make the server fetch.
var ErrNoSecret = errors.New("a webhook needs a shared secret")

// Webhook returns the handler for push webhooks: a POST authenticated the
// way GitHub signs it (X-Hub-Signature-256: sha256=HMAC-SHA256(secret,
// body), hex) or the way GitLab sends it (X-Gitlab-Token: secret) makes
// every branch source re-resolve now ([Source.Trigger]); the answer is 202
// and the fetch runs in the background. Anything else is refused (401,
// 405, 413) and logged without the request's headers.
func Webhook(secret []byte, sources []*Source, logger *slog.Logger) (http.Handler, error) {
	if len(secret) == 0 {
		return nil, ErrNoSecret
	}
	if logger == nil {
		logger = slog.Default()
	}
	key := append([]byte(nil), secret...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST a push event here", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		if len(body) > MaxWebhookBody {
			http.Error(w, "body larger than 4 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		if !authentic(key, r.Header, body) {
			logger.Warn("git webhook refused: missing or wrong signature", "remote", r.RemoteAddr)
			http.Error(w, "missing or wrong X-Hub-Signature-256 or X-Gitlab-Token", http.StatusUnauthorized)
			return
		}
		n := 0
		for _, s := range sources {
			if !s.Pinned() {
				s.Trigger()
				n++
			}
		}
		logger.Info("git webhook received; re-resolving branches", "sources", n)
		w.WriteHeader(http.StatusAccepted)
	}), nil
}

func authentic(key []byte, h http.Header, body []byte) bool {
	if sig := h.Get("X-Hub-Signature-256"); sig != "" {
		hexSum, ok := strings.CutPrefix(sig, "sha256=")
		got, err := hex.DecodeString(hexSum)
		if !ok || err != nil {
			return false
		}
		m := hmac.New(sha256.New, key)
		m.Write(body)
		return hmac.Equal(m.Sum(nil), got)
	}
	if tok := h.Get("X-Gitlab-Token"); tok != "" {
		return subtle.ConstantTimeCompare([]byte(tok), key) == 1
	}
	return false
}
