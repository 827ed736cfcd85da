package oauth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// callbackPath is the loopback redirect's path.
const callbackPath = "/callback"

// loopback receives the one authorization response: an HTTP server on
// 127.0.0.1 at a port the system picks (RFC 8252 section 7.3), which
// accepts a redirect carrying the state it expects and nothing else.
type loopback struct {
	ln  net.Listener
	srv *http.Server
	url string

	mu    sync.Mutex
	state string
	done  bool
	res   chan loopbackResult
}

type loopbackResult struct {
	res *auth.AuthorizationResult
	err error
}

func newLoopback() (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback redirect: %w", err)
	}
	l := &loopback{ln: ln, url: "http://" + ln.Addr().String() + callbackPath, res: make(chan loopbackResult, 1)}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	return l, nil
}

func (l *loopback) close() { l.srv.Close() }

func (l *loopback) expect(state string) {
	l.mu.Lock()
	l.state = state
	l.mu.Unlock()
}

func (l *loopback) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != callbackPath || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	status, err := l.accept(r.URL.Query())
	if status != http.StatusOK {
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		fmt.Fprintf(w, "<!doctype html><title>skillport</title><p>%s. You can close this tab.</p>", html.EscapeString(err.Error()))
		return
	}
	fmt.Fprint(w, "<!doctype html><title>skillport</title><p>Signed in. You can close this tab and return to the terminal.</p>")
}

// accept takes the authorization response q, once: a response with
// another state is refused (status 400) without ending the sign-in. With
// status 200, err is the authorization server's refusal, if it refused.
func (l *loopback) accept(q url.Values) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return http.StatusGone, errors.New("this sign-in has already finished")
	}
	if l.state == "" || q.Get("state") != l.state {
		// Not the answer to our request (a stale tab, another page): it
		// neither ends nor spoils the sign-in.
		return http.StatusBadRequest, errors.New("the state of this response does not match the sign-in in progress; ignored")
	}
	l.done = true
	if e := q.Get("error"); e != "" {
		err := fmt.Errorf("the authorization server refused the sign-in: %s %s", e, q.Get("error_description"))
		l.res <- loopbackResult{err: err}
		return http.StatusOK, err
	}
	l.res <- loopbackResult{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
	return http.StatusOK, nil
}

// MaxPastedBytes bounds a line pasted at the sign-in prompt.
const MaxPastedBytes = 16 << 10

// readPasted accepts the redirect URL pasted on r, line by line, for a
// browser on another machine (which cannot reach this one's loopback
// listener): the address bar of the page it could not load. Lines that
// are not the answer are reported on w and skipped.
func (l *loopback) readPasted(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxPastedBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || u.RawQuery == "" {
			fmt.Fprintf(w, "That is not the redirected URL (it has the code and state in its query); paste the whole address.\n")
			continue
		}
		status, err := l.accept(u.Query())
		if status == http.StatusOK || status == http.StatusGone {
			return
		}
		fmt.Fprintf(w, "%v\n", err)
	}
}

func (l *loopback) wait(ctx context.Context, timeout time.Duration) (*auth.AuthorizationResult, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-l.res:
		if r.err == nil && r.res.Code == "" {
			return nil, errors.New("the authorization server redirected back without a code")
		}
		return r.res, r.err
	case <-t.C:
		return nil, fmt.Errorf("no answer from the browser within %s; run the sign-in again", timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ErrNoBrowser is returned by OpenBrowser where no browser can be opened:
// no display, or no opener program.
var ErrNoBrowser = errors.New("no browser to open")

// OpenBrowser opens u in the user's browser: the program named by
// $BROWSER, else xdg-open, open (macOS) or rundll32 (Windows). The URL is
// one argument of a program started directly, never a shell command, so
// nothing in it is interpreted.
func OpenBrowser(u string) error {
	var cmd *exec.Cmd
	switch b := os.Getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return fmt.Errorf("%w: no DISPLAY or WAYLAND_DISPLAY", ErrNoBrowser)
		}
		p, err := exec.LookPath("xdg-open")
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNoBrowser, err)
		}
		cmd = exec.Command(p, u)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoBrowser, err)
	}
	go cmd.Wait()
	return nil
}
