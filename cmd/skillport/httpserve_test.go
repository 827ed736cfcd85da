package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHTTPFlags checks that a bad --allow-origin, --allow-host or
// --max-connections is a
// usage error naming the flag, found before anything starts.
func TestHTTPFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"--allow-origin", "https://app.example.com", "--allow-origin", "http://localhost:3000"}, ""},
		{[]string{"--allow-origin", "app.example.com"}, `--allow-origin "app.example.com"`},
		{[]string{"--allow-origin", "https://app.example.com/path"}, `--allow-origin "https://app.example.com/path"`},
		{[]string{"--max-connections", "0"}, "--max-connections must be positive"},
		{[]string{"--allow-origin", "https://a.example", "--allow-origin", "https://b.example", "--allow-host", "skills.example.com"}, ""},
		{[]string{"--allow-host", "https://skills.example.com"}, `--allow-host "https://skills.example.com"`},
		{[]string{"--allow-host", "*.example.com"}, `--allow-host "*.example.com"`},
	} {
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		httpFlags(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		opts, err := httpOptions(f, "serve")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want == "" && len(opts.AllowOrigins) != 2:
			t.Errorf("%v: origins %v", tc.args, opts.AllowOrigins)
		case tc.want != "" && (exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v (exit %d), want a usage error containing %q", tc.args, err, exitCode(err), tc.want)
		}
	}
}
