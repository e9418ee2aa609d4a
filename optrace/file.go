package optrace

import (
	"io"
	"os"
)

// ReadFile reads the op trace at path with Read: standard input (stdin)
// for "-". It returns the ops and the name the trace goes by in messages
// ("stdin" or path).
func ReadFile(path string, stdin io.Reader) ([]Op, string, error) {
	if path == "-" {
		ops, err := Read(stdin, "stdin")
		return ops, "stdin", err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	defer file.Close()
	ops, err := Read(file, path)
	return ops, path, err
}
