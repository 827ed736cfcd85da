package approval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/skillport/skillport/internal/sanitize"
	"github.com/skillport/skillport/internal/termsafe"
)

// Prompt asks on a terminal. Server-authored strings are sanitised before
// display, so a description cannot move the cursor or fake the question.
type Prompt struct {
	In  io.Reader
	Out io.Writer
}

// IsTerminal reports whether f is a character device, such as a TTY.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Interactive returns a Prompt on stdin/stderr when both are terminals, and
// Deny otherwise: a non-interactive host never approves by default.
func Interactive() Approver {
	if IsTerminal(os.Stdin) && IsTerminal(os.Stderr) {
		return &Prompt{In: os.Stdin, Out: os.Stderr}
	}
	return Deny{}
}

// Approve prints the request and reads an answer: y (this time), a (always,
// for this exact content), anything else refuses.
func (p *Prompt) Approve(ctx context.Context, req *Request) (Decision, error) {
	// Names, URIs and descriptions come from the server: every control,
	// newline or bidi character shows as an escape (termsafe.Escape), so a
	// prompt cannot be rewritten by what it shows.
	line := func(s string) string { return sanitize.Truncate(termsafe.Escape(s), 300) }
	w := p.Out
	switch req.Kind {
	case CrossOrigin:
		fmt.Fprintf(w, "\nA skill from server %q wants to read %s on server %q.\n", req.Origin, line(req.TargetURI), req.Target)
		fmt.Fprintf(w, "Skill %s (%s). Allow this one read? [y/N] ", line(req.Name), line(req.URI))
	case Exec:
		fmt.Fprintf(w, "\nWhile acting on MCP skill %s from %q, the model wants to run:\n  %s\nAllow? [y/N] ", line(req.Name), req.Origin, line(req.Target))
	default:
		fmt.Fprintf(w, "\nLoad skill %q from MCP server %q into the model's context?\n", line(req.Name), req.Origin)
		fmt.Fprintf(w, "  uri:         %s\n  description: %s\n", line(req.URI), line(req.Description))
		if req.Dynamic {
			fmt.Fprintf(w, "  content:     dynamic: the server publishes no digests; it cannot be verified\n")
		} else {
			fmt.Fprintf(w, "  content:     %d files, %d bytes, each verified against its digest when read\n", len(req.Files), req.Size)
		}
		if req.AllowedTools != "" {
			fmt.Fprintf(w, "  requests:    allowed-tools %s (not granted unless you answer t)\n", line(req.AllowedTools))
		}
		for _, warn := range req.Warnings {
			fmt.Fprintf(w, "  warning:     %s\n", line(warn))
		}
		fmt.Fprintf(w, "Skill content is untrusted input from the server. ")
		if req.Dynamic {
			fmt.Fprintf(w, "[y]es once / [N]o: ")
		} else {
			fmt.Fprintf(w, "[y]es once / [a]lways for this content / [t] always, and grant allowed-tools / [N]o: ")
		}
	}
	ans := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(p.In).ReadString('\n')
		ans <- strings.ToLower(strings.TrimSpace(s))
	}()
	select {
	case <-ctx.Done():
		return Decision{}, ctx.Err()
	case a := <-ans:
		switch {
		case a == "y" || a == "yes":
			return Decision{Allow: true}, nil
		case (a == "a" || a == "always") && req.Kind == Load && !req.Dynamic:
			return Decision{Allow: true, Remember: true}, nil
		case a == "t" && req.Kind == Load && !req.Dynamic:
			return Decision{Allow: true, Remember: true, GrantTools: true}, nil
		}
		return Decision{}, nil
	}
}
