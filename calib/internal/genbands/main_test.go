package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
)

// TestRun: a stale table is rewritten in place, the rest of the page kept;
// a page without the table's lines is an error naming it, left as it was.
func TestRun(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "..", calib.BandsDocPath))
	if err != nil {
		t.Fatal(err)
	}
	const row = "| joint | never fitted | light |"
	i := bytes.Index(page, []byte(row))
	if i < 0 {
		t.Fatalf("%s has no row %q", calib.BandsDocPath, row)
	}
	stale := bytes.Clone(page)
	stale[i+len(row)+2] ^= 1 // a figure of the row changed
	path := filepath.Join(t.TempDir(), "calibrate.md")
	if err := os.WriteFile(path, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, page) {
		t.Errorf("the stale table was not rewritten to the committed one (%v)", err)
	}
	if err := os.WriteFile(path, []byte("# no table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(path); err == nil || !strings.HasPrefix(err.Error(), path+": no line") {
		t.Errorf("a page without the table: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# no table\n" {
		t.Errorf("a page without the table was changed: %q", got)
	}
}
