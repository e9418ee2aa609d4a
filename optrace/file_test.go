package optrace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile: a file by its path, "-" from stdin, each named as such in
// the result and in errors; a missing file is the os error.
func TestReadFile(t *testing.T) {
	const trace = `{"op":"alloc","id":"a","size":1024,"stream":0}
{"op":"free","id":"a"}
`
	path := filepath.Join(t.TempDir(), "ops.txt")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := Read(strings.NewReader(trace), "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, name string }{{path, path}, {"-", "stdin"}} {
		ops, name, err := ReadFile(tc.path, strings.NewReader(trace))
		if err != nil || name != tc.name || len(ops) != len(want) {
			t.Errorf("ReadFile(%q) = %d ops, %q, %v; want %d ops, %q", tc.path, len(ops), name, err, len(want), tc.name)
		}
	}
	if _, _, err := ReadFile("-", strings.NewReader("bogus\n")); err == nil || !strings.HasPrefix(err.Error(), "stdin: ") {
		t.Errorf("a bad trace on stdin: %v, want an error naming stdin", err)
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "none"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
