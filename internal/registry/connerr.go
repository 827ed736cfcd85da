package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// lineError is an error of the database in one line. pgx joins one line
// per address tried (often the same line twice) with "\n\t"; a CLI error
// is one line.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// connectError is a failure to reach the registry database: the redacted
// address, the cause in words and what to check.
func connectError(dsn string, err error) error {
	cause, fix := "", ""
	var pge *pgconn.PgError
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case errors.As(err, &pge):
		cause = pge.Message
		switch pge.Code {
		case "28P01", "28000":
			fix = "check the user and password of the DSN (or PGPASSWORD / ~/.pgpass)"
		case "3D000":
			fix = "create the database, or name an existing one in the DSN"
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		cause, fix = "connection refused", "is PostgreSQL running there, and is the port right?"
	case errors.As(err, &dns):
		cause, fix = "unknown host "+dns.Name, "check the host name of the DSN"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout():
		cause, fix = "no answer in time", "is the host reachable, and is PostgreSQL listening there?"
	default:
		cause = oneLine(err.Error())
	}
	msg := fmt.Sprintf("registry: cannot connect to %s: %s", redact(dsn), cause)
	if fix != "" {
		msg += "; " + fix
	}
	return &lineError{msg: msg, err: err}
}

// oneLine joins the distinct lines of a multi-line message with "; ".
func oneLine(s string) string {
	var out []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line != "" && (len(out) == 0 || out[len(out)-1] != line) {
			out = append(out, strings.TrimSuffix(line, ":"))
		}
	}
	return strings.Join(out, "; ")
}
