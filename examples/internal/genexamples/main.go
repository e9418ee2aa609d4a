// Command genexamples writes the files of examples/ (files.go lists them
// and how each is made: a copy or cut of a file of ../shared/data, the
// development data beside the repository, or the output of the project's
// own generators, optrace/synth and internal/snaptest). go generate runs
// it in examples/:
//
//	go generate ./examples
//
// Without ../shared/data (a clone alone) it writes the generated files and
// leaves the copies and cuts as they are, saying so on stderr.
// TestExampleFiles fails when a committed file differs from what it writes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// sharedFromExamples is the development data seen from examples/, where go
// generate runs this command.
const sharedFromExamples = "../../shared/data"

func main() {
	shared := flag.String("shared", sharedFromExamples, "the development data the copies and cuts are made from")
	dir := flag.String("dir", ".", "the directory to write: examples/")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genexamples [-shared DIR] [-dir DIR]")
		os.Exit(2)
	}
	if err := run(*dir, *shared, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "genexamples:", err)
		os.Exit(1)
	}
}

// run writes every file of exampleFiles into dir. Where shared is absent,
// the files made from it are left as they are and log says which; a source
// file missing from a shared directory that is there is an error.
func run(dir, shared string, log io.Writer) error {
	_, err := os.Stat(shared)
	haveShared := err == nil
	var left []string
	for _, f := range exampleFiles {
		if f.src != "" && !haveShared {
			left = append(left, f.name)
			continue
		}
		b, err := build(f, shared)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			return err
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(log, "genexamples: %s absent: the %d files copied or cut from it are left as they are (%s)\n",
			shared, len(left), strings.Join(left, ", "))
	}
	return nil
}

// build returns the content of f, made from its source under shared if it
// has one (an error wrapping fs.ErrNotExist when that file is absent).
func build(f exampleFile, shared string) ([]byte, error) {
	var src []byte
	if f.src != "" {
		b, err := os.ReadFile(filepath.Join(shared, f.src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		src = b
	}
	b, err := f.gen(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	return b, nil
}
