package cli

import (
	"errors"
	"io"
	"os"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// openNamed opens a file that a document names (a scenario's trace or
// profile). Its error names the path through untrusted.Printable: the path is
// the document's, so a newline or ESC in it must not reach the terminal.
func openNamed(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			pe.Path = untrusted.Printable(pe.Path)
		}
		return nil, err
	}
	return f, nil
}
