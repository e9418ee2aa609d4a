package workload_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/workload"
)

// TestReadDigest: the digest is the whole input's SHA-256 whether the reader
// reads every row or stops at MaxRows (the rest is hashed after), and an
// input refused at its first bytes is refused before it is hashed to its
// end (an endless reader of NUL bytes returns at once).
func TestReadDigest(t *testing.T) {
	data, err := os.ReadFile("../examples/azure_conv.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	for _, maxRows := range []int{0, 3} {
		tr, got, err := workload.ReadDigest(bytes.NewReader(data), "azure_conv.csv", workload.Azure, workload.ReadOptions{MaxRows: maxRows})
		if err != nil {
			t.Fatal(err)
		}
		if got != hex.EncodeToString(want[:]) || (maxRows > 0 && len(tr.Requests) != maxRows) {
			t.Errorf("max rows %d: digest %s, %d requests; want %x", maxRows, got, len(tr.Requests), want)
		}
	}
	if _, _, err := workload.ReadDigest(testkit.Repeat("\x00"), "zeros.csv", workload.Azure, workload.ReadOptions{}); err == nil || !strings.Contains(err.Error(), "byte 0 is NUL") {
		t.Errorf("binary trace: %v", err)
	}
}

// TestReadBenchDigest: a benchmark file's digest covers the bytes after its
// JSON text too, so two files that differ only there are told apart.
func TestReadBenchDigest(t *testing.T) {
	data, err := os.ReadFile("../examples/vllm_bench_qps01.json")
	if err != nil {
		t.Fatal(err)
	}
	runs, a, err := workload.ReadBenchDigest(bytes.NewReader(data), "qps01.json")
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	if want := sha256.Sum256(data); a != hex.EncodeToString(want[:]) {
		t.Errorf("digest %s, want %x", a, want)
	}
	_, b, err := workload.ReadBenchDigest(bytes.NewReader(append(bytes.Clone(data), "\n\n"...)), "qps01.json")
	if err != nil || a == b {
		t.Errorf("trailing bytes: digest %s (same: %v), %v", b, a == b, err)
	}
	if _, _, err := workload.ReadBenchDigest(strings.NewReader("{"), "bad.json"); err == nil {
		t.Errorf("truncated file accepted: %v", err)
	}
}
