package install

import (
	"fmt"
	"os"
	"time"
)

// PauseEnv names the environment variable that stops a skillport process
// at one point of writing a skill folder, for the tests that kill it
// there: "write" (the first file of a staged skill written, the rest not
// yet) or "place" (the staged skill complete, not yet placed). The
// process says where on standard error and waits to be killed. Unset,
// it costs one lookup per point.
const PauseEnv = "SKILLPORT_TEST_PAUSE"

// PauseLine starts the line a paused process writes, followed by the
// point and the staging folder.
const PauseLine = "skillport: paused for a test at "

func testPause(point, stage string) {
	if os.Getenv(PauseEnv) != point {
		return
	}
	fmt.Fprintf(os.Stderr, "%s%s %s\n", PauseLine, point, stage)
	for {
		time.Sleep(time.Hour)
	}
}
