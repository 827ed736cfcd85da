//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"testing"
)

// Off Linux, a server that offers skills/execute must get a clear refusal
// rather than a build failure or an unsandboxed run.
func TestUnavailableOffLinux(t *testing.T) {
	r, err := New(nil)
	if !errors.Is(err, ErrUnavailable) || r != nil {
		t.Fatalf("New = %v, %v; want nil and ErrUnavailable", r, err)
	}
	if _, err := (*Runner)(nil).Run(context.Background(), Spec{Script: "x.py"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Run: %v; want ErrUnavailable", err)
	}
}
