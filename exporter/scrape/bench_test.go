package scrape

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkParse parses the hand-written vLLM V1 page (testdata/vllm_v1.prom).
//
//	go test ./exporter/scrape -run '^$' -bench Parse -benchmem -count 6
func BenchmarkParse(b *testing.B) {
	for _, file := range []string{"vllm_v1.prom", "sglang.prom"} {
		page, err := os.ReadFile("testdata/" + file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("file="+file, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				if _, err := Parse(bytes.NewReader(page), file); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
