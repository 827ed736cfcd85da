// Command skillport serves Agent Skills over MCP (SEP-2640), validates skill
// trees, and consumes MCP-served skills safely. The command is a thin layer:
// flags become calls into the skill, catalog, server, host and gateway
// packages, where all behaviour lives.
//
// Each subcommand lives in its own file and registers itself on rootCmd.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit status through cobra: 1 for a failed check, 2 for usage.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// usageErrorf reports bad arguments: exit status 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// errFailed marks a command that ran but found problems it already printed: exit status 1.
var errFailed = &exitError{code: 1, err: errors.New("")}

var logLevel = new(slog.LevelVar)

var rootCmd = &cobra.Command{
	Use:   "skillport",
	Short: "Serve Agent Skills over MCP, and load MCP-served skills safely",
	Long: `skillport publishes folders of Agent Skills (SKILL.md) over the Model Context
Protocol's Skills Extension (io.modelcontextprotocol/skills), validates them,
and consumes skills from MCP servers with verification and approval.`,
	SilenceUsage:  true,
	SilenceErrors: true,
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
		lvl, _ := cmd.Flags().GetString("log-level")
		if err := logLevel.UnmarshalText([]byte(lvl)); err != nil {
			return usageErrorf("--log-level: %q is not one of debug, info, warn, error", lvl)
		}
		hostGC(cmd)
		return nil
	},
}

func init() {
	rootCmd.PersistentFlags().String("log-level", "info", "log level on stderr: debug, info, warn or error")
	// Logs always go to stderr: on stdio transports stdout carries the protocol.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel})))
	rootCmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, err: err}
	})
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the exit status.
func run(args []string) int {
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "skillport:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "skillport:", err)
	// cobra reports unknown commands and bad arguments as plain errors.
	return 2
}
