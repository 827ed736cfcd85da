package main

import (
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
)

// hostGC sets the collector for commands that run a host: they churn
// through short-lived JSON-RPC buffers over a small live heap (see
// host.GCPercent). An explicit GOGC in the environment wins. serve keeps
// the default: its live heap is the catalog, and its memory is what
// operators size.
func hostGC(cmd *cobra.Command) {
	if cmd.Annotations["gc"] != "host" {
		return
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(host.GCPercent)
}

// hostCommand marks cmd as one that runs a host.
func hostCommand(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations["gc"] = "host"
	return cmd
}
