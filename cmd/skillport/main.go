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
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/internal/suggest"
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
	rootCmd.SuggestionsMinimumDistance = 2
	rootCmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, err: explainFlagError(cmd, err)}
	})
}

// explainFlagError adds the fix to pflag's errors, which cobra lacks for
// flags: the closest flag to an unknown one, and the unit a duration
// needs ("--timeout 3" means 3s).
func explainFlagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if c := suggest.Closest(name, names); c != "" {
			return fmt.Errorf("%s; did you mean --%s? (see skillport %s --help)", msg, c, cmd.Name())
		}
		return fmt.Errorf("%s; see skillport %s --help", msg, cmd.Name())
	}
	if strings.Contains(msg, "missing unit in duration") {
		// pflag: invalid argument "3" for "--timeout" flag: time: missing unit in duration "3"
		if _, rest, ok := strings.Cut(msg, `invalid argument "`); ok {
			if val, rest, ok := strings.Cut(rest, `" for "`); ok {
				flag, _, _ := strings.Cut(rest, `"`)
				return fmt.Errorf("%s %s: a duration needs a unit: %ss (or %sms, %sm)", flag, val, val, val, val)
			}
		}
	}
	return err
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
