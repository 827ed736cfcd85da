package web

import (
	"net/http"

	"github.com/skillport/skillport/internal/budget"
)

// charge reserves n bytes of the server's budget of large answers
// (package internal/budget, carried by the request's context when package
// endpoint serves it) for as long as an answer of about that size is
// produced and written: a client that never reads must not hold a file's
// bytes outside the bound the whole server keeps. On a spent budget it
// answers 503 and reports false.
func charge(w http.ResponseWriter, r *http.Request, n int64) (release func(), ok bool) {
	b, _ := budget.FromContext(r.Context())
	release, err := b.Acquire(r.Context(), n)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error()+"; retry shortly", http.StatusServiceUnavailable)
		return nil, false
	}
	return release, true
}
