package pickle_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// BenchmarkDecode decodes the largest shared real snapshot (skipped when
// ../shared is absent) and, for comparison, a committed fixture.
//
//	go test ./snapshot/pickle -run '^$' -bench Decode -benchmem
func BenchmarkDecode(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "data", "snapshots", "*.pickle"))
	var largest string
	var size int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > size {
			largest, size = f, fi.Size()
		}
	}
	inputs := map[string]string{"fixture=plain_p4": filepath.Join("testdata", "plain_p4.pickle")}
	if largest != "" {
		inputs["file=largest-shared"] = largest
	}
	for name, path := range inputs {
		b.Run(name, func(b *testing.B) {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := pickle.DecodeBytes(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
