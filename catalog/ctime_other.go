//go:build !linux

package catalog

import (
	"errors"
	"time"
)

type statBuf struct{}

// lchangeTime is unknown here: Watch then always checks the tree once after
// it starts.
func lchangeTime(string, *statBuf) (time.Time, error) {
	return time.Time{}, errors.New("change times are not available on this system")
}

// dirStampOf is unknown here: Watch lists every directory itself.
func dirStampOf(*statBuf) (dirStamp, bool) { return dirStamp{}, false }
