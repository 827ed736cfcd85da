package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/termsafe"
)

// esc is the one escape for every name and message that comes from disk or
// from a server (termsafe.Escape): terminal control sequences, newlines and
// bidi overrides print as visible escapes.
func esc(s string) string { return termsafe.Escape(s) }

// terminalWidth returns the width of w when it is a terminal, else 0. Output
// to a terminal is formatted for people (a table fitted to the width,
// progress lines); output to a pipe or file is for programs (tab-separated,
// never truncated, no progress), as gh does. Tests replace it.
var terminalWidth = func(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		return 80
	}
	return width
}

// writeJSON prints v as indented JSON: the --json output of ls, pull and
// verify.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// humanSize formats a byte count for people: 512 B, 1.5 KiB, 12 MiB.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	suffix := []string{"KiB", "MiB", "GiB", "TiB"}[i]
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, suffix)
	}
	return fmt.Sprintf("%.0f %s", v, suffix)
}

// count formats "1 skill", "2 skills".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// printError prints a message from a server or the filesystem once, on
// stderr, escaped line by line: the first line after prefix, the others
// (a server's stderr, a cause) indented beneath it.
func printError(w io.Writer, prefix, msg string) {
	lines := termsafe.Lines(msg)
	fmt.Fprintf(w, "skillport: %s%s\n", prefix, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintln(w, "  "+l)
	}
}

// originOutcome classifies an origin's status for the user.
type originOutcome int

const (
	originOK       originOutcome = iota
	originNoSkills               // answered, but serves no skills: informational
	originFailed
)

func outcome(o host.OriginStatus) originOutcome {
	switch {
	case o.Err == nil:
		return originOK
	case errors.Is(o.Err, host.ErrNoSkills):
		return originNoSkills
	}
	return originFailed
}

// reportOrigins prints, once each, what the user must know about the
// origins: diagnostics about entries, servers that serve no skills (a note;
// most servers in a desktop client's configuration are tool servers), and
// servers that failed, with their cause. It reports whether no origin failed.
func reportOrigins(w io.Writer, h *host.Host, f *hostFlags) bool {
	failed := map[string]bool{}
	ok := true
	for _, o := range h.Origins() {
		if o.Err != nil {
			failed[o.Label] = true
		}
	}
	for _, d := range h.Diagnostics() {
		// An origin's failure is also a diagnostic: print it once, below.
		if failed[d.Origin] && d.URI == "" && d.Severity == host.Error {
			continue
		}
		printError(w, "", d.String())
	}
	for _, o := range h.Origins() {
		switch outcome(o) {
		case originNoSkills:
			fmt.Fprintf(w, "skillport: %s: no skills (the server does not declare the Skills extension)\n", esc(o.Label))
		case originFailed:
			ok = false
			msg := o.Err.Error()
			if errors.Is(o.Err, context.DeadlineExceeded) && f != nil && !f.timeoutSet {
				msg += fmt.Sprintf("; pass --timeout %v to wait longer", 4*f.timeout)
			}
			var he *host.HTTPError
			if errors.As(o.Err, &he) && he.Status == http.StatusUnauthorized {
				msg += fmt.Sprintf(" (skillport auth login %s, or --header \"Authorization: Bearer …\")", he.URL)
			}
			printError(w, esc(o.Label)+": ", strings.TrimPrefix(msg, host.ErrUnavailable.Error()+": "))
			if f != nil && f.noDiscovery[o.Label] != "" {
				printError(w, esc(o.Label)+": ", "nor is it a web site with skills: "+f.noDiscovery[o.Label])
			}
		}
	}
	return ok
}
