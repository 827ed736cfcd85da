//go:build !unix

package registry

// openFlags: other systems have no FIFOs that block an open.
const openFlags = 0
