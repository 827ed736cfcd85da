//go:build unix

package registry

import "syscall"

// openFlags keep opening a FIFO swapped into the tree from blocking a
// publish: it is then refused as not a regular file.
const openFlags = syscall.O_NONBLOCK
