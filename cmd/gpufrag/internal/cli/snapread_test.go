package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// The reader the progress bar counts through knows the file's size, as the
// file itself does: the decoder checks declared lengths against it, so a
// truncated file is named by the opcode whose length runs past its end
// (FRAME ... input ends at offset N), on a terminal as in a pipe.
func TestCountingReaderSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &countingReader{f: f, bar: progress.New(nil, 1000, "read")}
	if got, want := pickle.ReaderSize(r, 0), pickle.ReaderSize(f, 0); got != want || want != 1000 {
		t.Errorf("size through the counting reader %d, of the file %d; want 1000", got, want)
	}
}
