package main

import (
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// hostGCPercent is the garbage-collector setting (runtime/debug.SetGCPercent)
// that the host commands (ls, verify, pull, load, gateway) run with when
// GOGC is not set. go-sdk decodes each JSON-RPC message with fresh 32 KiB
// buffers, so a process whose live heap is a few MiB collects every few
// messages; at 400, discovering 20 servers takes about half the CPU
// (BenchmarkDiscovery20 in host/e2e reports both settings). The heap may
// grow to five times what is live rather than twice.
const hostGCPercent = 400

// hostGC sets the collector for commands that run a host: they churn
// through short-lived JSON-RPC buffers over a small live heap. An explicit
// GOGC in the environment wins. serve keeps the default: its live heap is
// the catalog, and its memory is what operators size.
func hostGC(cmd *cobra.Command) {
	if cmd.Annotations["gc"] != "host" {
		return
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(hostGCPercent)
}

// hostCommand marks cmd as one that runs a host.
func hostCommand(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations["gc"] = "host"
	return cmd
}
