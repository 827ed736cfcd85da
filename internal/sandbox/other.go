//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// New always fails off Linux: bubblewrap, and the namespaces it builds on,
// exist only there, and there is no unsandboxed path. The binary still builds
// for every OS so that everything else (serving, the gateway, pull) works; a
// server offering skills/execute then refuses scripts with this error.
func New(opts *Options) (*Runner, error) {
	return nil, fmt.Errorf("sandbox: %w: scripts run only on Linux, inside bubblewrap, and this is %s/%s; serve skills with scripts from a Linux machine", ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

// Run fails like [New]; it exists so that the package's API is the same on
// every OS.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Result, error) {
	return nil, fmt.Errorf("sandbox: %s: %w: scripts run only on Linux", spec.Script, ErrUnavailable)
}

// Budget reports that there is no sandbox here.
func (r *Runner) Budget() string { return "no sandbox: scripts run only on Linux" }

type cgroups struct{}
