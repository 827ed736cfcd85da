//go:build !linux

package catalog

import (
	"io/fs"
	"time"
)

// changeTime is unknown here: Watch then always checks the tree once after
// it starts.
func changeTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
