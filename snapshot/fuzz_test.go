package snapshot_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// FuzzRead checks that Read never panics and that every failure is a
// *snapshot.Error, and that what it accepts converts to a layout.
//
//	go test ./snapshot -run '^$' -fuzz FuzzRead -fuzztime 60s
func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.pickle"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(encode(base()))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := snapshot.ReadBytes(data, "fuzz")
		if err != nil {
			var e *snapshot.Error
			if !errors.As(err, &e) || e.Err == nil {
				t.Fatalf("error %v (%T) is not a *snapshot.Error with a kind", err, err)
			}
			return
		}
		for d := 0; d < 2; d++ {
			_ = s.Layout(d, 1<<40).String()
		}
	})
}
