//go:build linux && !amd64 && !arm64

package sandbox

// No filter is defined here, so New reports the sandbox unavailable rather
// than run scripts without one.
const (
	auditArch = 0
	abiBit    = 0
)

var archDenied []uint32
