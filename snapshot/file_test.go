package snapshot_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// TestReadFile: "-" reads stdin under the name "stdin", a path the file
// under its own, a directory is refused as such and a missing file is
// the open error.
func TestReadFile(t *testing.T) {
	const path = "../examples/snapshot.pickle"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, name, err := snapshot.ReadFile("-", bytes.NewReader(data), nil)
	if err != nil || name != "stdin" {
		t.Fatalf("stdin: %q, %v", name, err)
	}
	b, name, err := snapshot.ReadFile(path, nil, &snapshot.Options{SkipTraceFrames: true})
	if err != nil || name != path || len(a.Segments) != len(b.Segments) || len(a.Segments) == 0 {
		t.Fatalf("file: %q, %v", name, err)
	}
	if _, _, err := snapshot.ReadFile("..", nil, nil); err == nil || err.Error() != "..: is a directory, not a snapshot file" {
		t.Errorf("directory: %v", err)
	}
	if _, _, err := snapshot.ReadFile("no/such.pickle", nil, nil); !os.IsNotExist(err) || !strings.Contains(err.Error(), "no/such.pickle") {
		t.Errorf("missing: %v", err)
	}
}
