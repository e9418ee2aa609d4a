// Package cli is gpufrag's command line: cobra commands that parse flags,
// read inputs, call the library packages and print their results. It holds
// wiring only; what a command computes lives in the library (optrace, frag,
// alloc/...).
//
// Every command runs in-process from Main with explicit arguments and
// streams, so tests drive the real command tree with buffers. Conventions:
// results go to stdout (a table, or JSON with --json), every name from an
// input through untrusted.Printable (untrusted.PrintableJSON for JSON); errors go to
// stderr as "gpufrag: <message>", through untrusted.PrintableText; the exit
// status is 0 on success, 1 when the work failed (a bad trace, an
// allocator error) and 2 for a usage error (an unknown command or flag, a
// bad flag value, too many arguments, a flag that would have no effect).
// Messages name the flag they are about first ("--trace t.csv: line 3:
// ...", flagError and inFlagFile) and show no Go package name as a clause
// of their own (TestMessagesNoPackagePrefix); an unknown flag or value gets
// the near names (didYouMean, flagHint); flag rules (flagrules.go) refuse a
// flag that the others given make ineffective. A command's long help and
// examples are text, help/NAME.txt (withHelp).
package cli

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed
	exitUsage = 2 // the command line is wrong
)

// MainProcess is Main for the gpufrag process itself (cmd/gpufrag's main):
// it also lets the engine's commands choose settings that hold for the
// whole process (engineHeap), which Main called many times in one test
// process must not.
func MainProcess(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	wholeProcess = true
	return Main(args, stdin, stdout, stderr)
}

// wholeProcess is set by MainProcess.
var wholeProcess bool

// Main runs the gpufrag command line with args (without the program name)
// and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root := newRoot(stdin, stdout, stderr)
	if isCompletionRequest(args) {
		registerCompletions(root)
	}
	root.SetArgs(args)
	var prof *profiling // --cpuprofile, --memprofile (profiling.go)
	rules := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := rules(cmd, args); err != nil {
			return err
		}
		var err error
		prof, err = startProfiles(cmd, args)
		return err
	}
	err := root.Execute()
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err == nil {
		return exitOK
	}
	// A message quotes input values with untrusted.Quote; PrintableText is the
	// backstop for one that names an input raw (a file a document names):
	// no ESC, C1 or bidi control reaches the terminal from an error.
	fmt.Fprintf(stderr, "gpufrag: %s\n", untrusted.PrintableText(strings.TrimRight(err.Error(), "\n")))
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", ue.cmd.CommandPath())
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's own error for `gpufrag nosuchcommand`; it has no type.
		fmt.Fprintf(stderr, "Run 'gpufrag --help' for usage.\n")
		return exitUsage
	}
	return exitFail
}

// usageError is a mistake in the command line, reported with exit status 2.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd, fmt.Errorf(format, args...)}
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "gpufrag",
		Short:         "Model GPU memory allocators to study fragmentation in LLM inference",
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	withHelp(root, "gpufrag")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(newHelp())
	// Every command's flag rules (flagrules.go), before it runs; no
	// command sets a PersistentPreRunE of its own, which would replace this.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return checkFlagRules(cmd) }
	addProfileFlags(root)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(newReplay(), newVersion())
	root.AddCommand(newSimulate())
	root.AddCommand(newAnalyzeCmd(stdout, stderr))
	root.AddCommand(newDiffCmd(stdout))
	root.AddCommand(newClusterCmd(stdout, stderr))
	root.AddCommand(newDefragCmd())
	root.AddCommand(newRulesCmd())
	root.AddCommand(newExperimentsCmd())
	root.AddCommand(newAdviseCmd())
	root.AddCommand(newCalibrateCmd())
	root.AddCommand(newExporterCmd(stdout, stderr))
	return root
}

//go:embed help/*.txt
var helpFiles embed.FS

// withHelp sets cmd's long help and examples from help/NAME.txt: the text
// people read in `gpufrag NAME --help`, kept as text rather than as Go
// string constants; a line "--- example" starts the examples.
func withHelp(cmd *cobra.Command, name string) {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a command without its help file: every help test finds it
	}
	long, example, _ := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\n--- example\n")
	cmd.Long, cmd.Example = long, example
}
