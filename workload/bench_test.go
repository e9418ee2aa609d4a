package workload_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// BenchmarkRead reads 100,000 Azure-style CRLF rows (3.7 MB), the line
// handling and CSV path every timed CSV trace takes.
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\r\n")
	for i := range 100_000 {
		fmt.Fprintf(&buf, "2023-11-16 18:%02d:%02d.%07d,%d,%d\r\n", i/60000%60, i/1000%60, i%1000*10000, 100+i%4000, 1+i%500)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := workload.Read(bytes.NewReader(data), "bench.csv", workload.Auto, workload.ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadMooncake reads 20,000 Mooncake-style JSONL rows with 1 to
// 40 hash ids each, the JSON path every Mooncake and JSONL trace takes.
func BenchmarkReadMooncake(b *testing.B) {
	var buf bytes.Buffer
	for i := range 20_000 {
		fmt.Fprintf(&buf, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, i*3, 512*(1+i%40), 1+i%500)
		for j := range 1 + i%40 {
			if j > 0 {
				buf.WriteString(", ")
			}
			fmt.Fprintf(&buf, "%d", i*7+j)
		}
		buf.WriteString("]}\n")
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := workload.Read(bytes.NewReader(data), "bench.jsonl", workload.Auto, workload.ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
