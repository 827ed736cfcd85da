package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/skillport/skillport/internal/sandbox"
)

// A server runs a skill's script only when its operator allowed scripts, and
// refuses when no sandbox can be built.
func ExampleRunner_Run() {
	r, err := sandbox.New(&sandbox.Options{Limits: sandbox.Limits{WallClock: 10 * time.Second}})
	if errors.Is(err, sandbox.ErrUnavailable) {
		log.Fatalf("refusing skills/execute: %v", err)
	}
	res, err := r.Run(context.Background(), sandbox.Spec{
		SkillDir: "/srv/skills/pdf",
		Script:   "scripts/extract.py",
		Stdin:    []byte(`{"file": "report.pdf"}`),
	})
	switch {
	case errors.Is(err, sandbox.ErrScriptNotFound):
		log.Fatal(err) // the request named no script of this skill
	case err != nil:
		log.Fatal(err)
	case res.Failed():
		fmt.Printf("script failed (exit %d, %s): %s\n", res.ExitCode, res.Reason, res.Stderr)
	}
	for _, o := range res.Outputs {
		fmt.Println(o.Path, o.MIMEType, len(o.Data))
	}
}
