package cli

import (
	"io"
	"os"
	"path/filepath"

	"github.com/gpufrag/gpufrag/internal/outfile"
	"github.com/spf13/cobra"
)

// fileFlag is a file named on the command line: the flag that names it (or
// the argument, "the snapshot argument") and its path. An empty path is a
// flag not given.
type fileFlag struct {
	flag, path string
}

// namedFile is an input file that a document names (a scenario's profile:
// or model:): the document as the user gave it ("--scenario s.yaml"), the
// field, and the path as it is opened.
type namedFile struct {
	doc, field, path string
}

// checkOutputs refuses, as a usage error, an output file that is one of the
// inputs or another output: a report written over the trace it describes
// would lose the user's data without a word. The inputs are the files the
// flags name and the files named inside the documents given to them
// (named: a scenario's model, profile and trace), checked alike. Files are compared
// as the operating system sees them (os.SameFile: the same file through
// another name, a link or "./"), so only outputs that exist already can
// collide; "-" as an output (standard output) is never a file here, and as
// an input it is the file standard input was redirected from, if any. An output
// in a directory that does not exist is refused too, before the work that
// would write it.
func checkOutputs(cmd *cobra.Command, outputs, inputs []fileFlag, named ...namedFile) error {
	type seen struct {
		fileFlag
		what string      // an input: what names it
		fi   os.FileInfo // nil: the file does not exist (yet)
	}
	var known []seen
	stat := func(path string) os.FileInfo {
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			return fi
		}
		return nil
	}
	for _, in := range inputs {
		if in.path == "-" {
			// Standard input redirected from a file (< snap.pickle) is that
			// file: an output over it, by its name or as /dev/stdin, would
			// replace the input the command read.
			if f, ok := cmd.InOrStdin().(*os.File); ok && f != nil {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					known = append(known, seen{in, "the file on standard input, given to " + in.flag + " as -", fi})
				}
			}
			continue
		}
		if in.path != "" {
			known = append(known, seen{in, "the input file given to " + in.flag, stat(in.path)})
		}
	}
	for _, n := range named {
		if n.path != "" && n.path != "-" {
			known = append(known, seen{fileFlag{n.field, n.path}, "the input file named by " + n.field + " in " + n.doc, stat(n.path)})
		}
	}
	for _, out := range outputs {
		if out.path == "" || out.path == "-" {
			continue
		}
		fi := stat(out.path)
		if d, err := os.Stat(out.path); err == nil && d.IsDir() {
			// Say so before the work, not after a long simulation.
			return usageErrorf(cmd, "%s %s: a directory; give the path of a file to write", out.flag, out.path)
		}
		if fi == nil {
			// Say so before the work, not after a long simulation.
			dir := filepath.Dir(out.path)
			if d, err := os.Stat(dir); err != nil || !d.IsDir() {
				return usageErrorf(cmd, "%s %s: the directory %s does not exist", out.flag, out.path, dir)
			}
		}
		for _, k := range known {
			same := k.fi != nil && fi != nil && os.SameFile(k.fi, fi)
			if !same && (k.fi == nil || fi == nil) {
				// A file that does not exist yet is the same as another
				// only by name.
				same = filepath.Clean(k.path) == filepath.Clean(out.path)
			}
			switch {
			case !same:
			case k.what != "":
				what := k.what
				if k.path != out.path && k.path != "-" {
					what += " (" + k.path + ")"
				}
				return usageErrorf(cmd, "%s %s is %s: refusing to overwrite it; write the output to another file", out.flag, out.path, what)
			default:
				return usageErrorf(cmd, "%s and %s both write %s: give them different files", k.flag, out.flag, out.path)
			}
		}
		known = append(known, seen{out, "", fi})
	}
	return nil
}

// writeOutput writes path with write, replacing a file there whole or not
// at all (internal/outfile; the --html pages and --png charts).
func writeOutput(path string, write func(io.Writer) error) error {
	return outfile.Write(path, 0o644, write)
}
