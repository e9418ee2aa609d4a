package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/internal/human"
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

// versionJSON is `gpufrag version --json` (docs/json.md).
type versionJSON struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpufrag's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionJSON{version(), runtime.Version(), runtime.GOOS, runtime.GOARCH}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v, true)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gpufrag %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version, Go release, OS and architecture as a JSON object")
	return cmd
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%q takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// subcommandArgs is the Args of a command that only groups others (cluster,
// experiments): a word after it that names none of them is an unknown
// command, a usage error with the near names that points at the group's
// help. cobra's own check (cobra.NoArgs) suggests nothing below the root
// and sends the user to the root's help.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usageErrorf(cmd, "unknown command %q for %q%s", args[0], cmd.CommandPath(),
		human.DidYouMean(args[0], subcommandNames(cmd, "")))
}

// subcommandNames lists the names of cmd's commands that help shows, each
// after prefix.
func subcommandNames(cmd *cobra.Command, prefix string) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			names = append(names, prefix+c.Name())
		}
	}
	return names
}

// newHelp is the help command: cobra's, except that a topic that names no
// command is a usage error on stderr (exit 2) with the near command names,
// where cobra's prints "Unknown help topic" and the root's usage on stdout
// and exits 0.
func newHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: gpufrag help cluster simulate is gpufrag cluster simulate --help.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if (sub.IsAvailableCommand() || sub.Name() == "help") && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			cmd, rest, err := root.Find(args)
			if err == nil && len(rest) == 0 {
				cmd.InitDefaultHelpFlag()
				cmd.InitDefaultVersionFlag()
				return cmd.Help()
			}
			// The deepest command the topic names, and the first word
			// below it that names none of its commands.
			known, word := root, args[0]
			if err == nil {
				known, word = cmd, rest[0]
			}
			prefix := strings.TrimSpace(strings.TrimPrefix(known.CommandPath(), root.Name()))
			if prefix != "" {
				prefix += " "
			}
			return usageErrorf(root, "unknown help topic %q%s", strings.Join(args, " "),
				human.DidYouMean(prefix+word, subcommandNames(known, prefix)))
		},
	}
}
