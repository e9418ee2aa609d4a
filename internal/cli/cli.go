// Package cli is gpufrag's command line: cobra commands that parse flags,
// read inputs, call the library packages and print their results. It holds
// wiring only; what a command computes lives in the library (optrace, frag,
// alloc/...).
//
// Every command runs in-process from Main with explicit arguments and
// streams, so tests drive the real command tree with buffers. Conventions:
// results go to stdout (a table, or JSON with --json); errors go to stderr
// as "gpufrag: <message>"; the exit status is 0 on success, 1 when the work
// failed (a bad trace, an allocator error) and 2 for a usage error (an
// unknown command or flag, a bad flag value, too many arguments).
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed
	exitUsage = 2 // the command line is wrong
)

// Main runs the gpufrag command line with args (without the program name)
// and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "gpufrag: %s\n", strings.TrimRight(err.Error(), "\n"))
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

const rootLong = `gpufrag models GPU memory allocators to study memory fragmentation in LLM
inference.

It replays the allocations a program makes through models of PyTorch's CUDA
caching allocator and its alternatives (size classes, one pre-reserved arena,
a stream-ordered pool, one device allocation per request, and virtual memory
mapped page by page) on a modelled GPU, and reports for each how much memory
it reserves, whether it runs out, and how fragmented its free memory is.

Start with:

  gpufrag replay           replay an embedded LLM-serving trace through all six
                           allocators and compare them
  gpufrag replay --help    the trace format, the allocators and their settings`

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpufrag",
		Short: "Model GPU memory allocators to study fragmentation in LLM inference",
		Long:  rootLong,
		Example: `  gpufrag replay
  gpufrag replay ops.jsonl --alloc caching --alloc caching:expandable_segments:True
  gpufrag replay ops.jsonl --alloc caching,vmm:2MiB --capacity 40GiB --json`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: true,
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd, err}
	})
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(newReplay(), newVersion())
	root.AddCommand(newSimulate())
	root.AddCommand(newAnalyzeCmd(stdout, stderr))
	root.AddCommand(newClusterCmd(stdout, stderr))
	root.AddCommand(newDefragCmd())
	return root
}
