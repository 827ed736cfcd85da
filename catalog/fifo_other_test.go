//go:build !unix

package catalog

import "errors"

// mkfifo fails where the file system has no named pipes (Windows keeps its
// pipes in a namespace of their own, which no skill tree can reach).
func mkfifo(string) error { return errors.ErrUnsupported }
