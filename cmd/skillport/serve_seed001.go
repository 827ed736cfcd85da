//go:build !skillport_no_seed001

package main

import (
	"log/slog"

	"github.com/skillport/skillport/internal/sandbox"
	"github.com/skillport/skillport/skillserver"
)

// serve's share of the seed001 profile: --allow-scripts runs skills/execute
// in the sandbox.
func init() {
	scriptsProfile = skillserver.ProfileSeed001
	newScriptRunner = func(log *slog.Logger, maxRuns int) (skillserver.ScriptRunner, error) {
		runner, err := sandbox.New(&sandbox.Options{Logger: log, MaxRuns: maxRuns})
		if err != nil {
			return nil, err
		}
		log.Info("serve: scripts run sandboxed", "budget", runner.Budget(), "max_runs", runner.MaxRuns())
		return runner, nil
	}
}
