//go:build !skillport_no_seed001

package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// --max-script-runs reaches the sandbox runner (its log line reports the
// runner's own capacity), defaults to 4, and refuses values below 1 as a
// usage error before anything starts.
func TestServeMaxScriptRuns(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		code  int
		want  string
	}{
		{[]string{"--allow-scripts"}, 0, "max_runs=4"},
		{[]string{"--allow-scripts", "--max-script-runs", "2"}, 0, "max_runs=2"},
		{[]string{"--allow-scripts", "--max-script-runs", "0"}, 2, "--max-script-runs 0: must be at least 1"},
		{[]string{"--max-script-runs", "-3"}, 2, "--max-script-runs -3: must be at least 1"},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			// An empty, closed stdin: serve starts, then ends at EOF.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			oldIn := os.Stdin
			os.Stdin = r
			defer func() { os.Stdin = oldIn; r.Close() }()
			// The log handler was made for the real stderr at init.
			var logs bytes.Buffer
			oldLog := slog.Default()
			slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
			defer slog.SetDefault(oldLog)
			args := append([]string{"serve", "--watch=false"}, tc.flags...)
			_, errOut, code := runCLI(t, append(args, "../../examples/skills")...)
			errOut += logs.String()
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.want)
			}
		})
	}
}
