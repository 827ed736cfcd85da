package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the binary's version as Go recorded it at build time: the
// module version for `go install …@v1.2.3` (or @latest), else the commit
// ("devel+abc1234", "-dirty" when built from a modified tree). Servers and
// clients see it as serverInfo/clientInfo.version, so a bug report names
// the build.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	// Since Go 1.24 a build from a checkout is stamped with a
	// pseudo-version (v0.0.0-20261127230909-064bc5f1a2b3+dirty): it names
	// a commit, not a release, so it is shown as one, as the docs say
	// ("devel+<commit>"); a tagged commit keeps its tag.
	if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(12, len(rev))] + dirty
}

// pseudoVersion matches the tail of a Go pseudo-version: a UTC time and a
// 12-digit commit prefix, and +dirty for a modified tree.
var pseudoVersion = regexp.MustCompile(`[.-]\d{14}-[0-9a-f]{12}(\+dirty)?$`)

func init() {
	rootCmd.Version = version()
	rootCmd.SetVersionTemplate("skillport {{.Version}}\n")
	rootCmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version of skillport and of the Go toolchain that built it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "skillport %s (%s, %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	})
}
