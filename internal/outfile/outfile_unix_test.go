//go:build unix

package outfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A device or a named pipe is written in place: a rename would replace
// the node.
func TestSpecialFilesInPlace(t *testing.T) {
	if err := WriteFile(os.DevNull, []byte("discarded"), 0o644); err != nil {
		t.Fatalf("%s: %v", os.DevNull, err)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode().IsRegular() {
		t.Fatalf("%s is now %v (%v)", os.DevNull, fi, err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := WriteFile(fifo, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
}
