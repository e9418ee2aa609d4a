package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the release version, set at link time with
//
//	go build -ldflags "-X github.com/gpufrag/gpufrag/cmd/gpufrag/internal/cli.Version=v0.1.0" ./cmd/gpufrag
//
// When empty, the module version recorded by the Go toolchain is used
// ("(devel)" for a build from a checkout).
var Version string

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gpufrag's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gpufrag %s (%s, %s/%s)\n",
				version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%q takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
