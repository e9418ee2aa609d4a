package scrape

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// satisfies the documented ranges. Seeds: the golden expositions plus
// testdata/fuzz/FuzzParse.
//
//	go test ./exporter/scrape -run '^$' -fuzz FuzzParse -fuzztime 20s
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.prom"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Issue 13: labels past MaxLabelBytes, a huge count label, non-finite
	// and negative values.
	f.Add([]byte(`vllm:kv_cache_usage_perc{model_name="` + strings.Repeat("m", MaxLabelBytes+1) + `"} 0.5` + "\n"))
	f.Add([]byte("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"" +
		strings.Repeat("9", 10<<10) + "\"} 1\n"))
	f.Add([]byte("sglang:token_usage{model_name=\"m\"} +Inf\nvllm:num_preemptions_total{model_name=\"m\"} -1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		insts, err := Parse(bytes.NewReader(in), "fuzz")
		if err != nil {
			if insts != nil {
				t.Fatalf("instances %+v with error %v", insts, err)
			}
			if len(err.Error()) > 4000 {
				t.Fatalf("error of %d bytes echoes the input: %.200s", len(err.Error()), err)
			}
			return
		}
		if len(insts) == 0 {
			t.Fatal("no instances and no error")
		}
		if !slices.IsSortedFunc(insts, compareInstances) {
			t.Fatalf("instances not sorted: %+v", insts)
		}
		for i, in := range insts {
			if i > 0 && instanceKey(insts[i-1]) == instanceKey(in) {
				t.Fatalf("instance %s twice", describe(in))
			}
			if in.Engine != VLLM && in.Engine != SGLang {
				t.Fatalf("engine %q", in.Engine)
			}
			for _, v := range []float64{in.Usage, in.Preemptions, in.PrefixQueries, in.PrefixHits, in.PrefixHitRate} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("bad value %v in %+v", v, in)
				}
			}
			if in.Usage > 1 || in.PrefixHitRate > 1 {
				t.Fatalf("fraction above 1 in %+v", in)
			}
			if len(in.Model) > MaxLabelBytes {
				t.Fatalf("model label of %d bytes accepted", len(in.Model))
			}
			// Issue 28: every label is plain text, the others bounded together.
			others := 0
			for k, v := range in.Labels {
				others += len(k) + len(v) + 2
				if untrusted.CheckName(k) != nil || untrusted.CheckName(v) != nil {
					t.Fatalf("label %q=%q accepted", k, v)
				}
			}
			if untrusted.CheckName(in.Model) != nil || others > MaxLabelBytes {
				t.Fatalf("model %q, %d bytes of other labels accepted", in.Model, others)
			}
			if in.Blocks < 0 || in.BlockSize < 0 || in.HasBlocks && in.BlockSize < 1 {
				t.Fatalf("bad blocks in %+v", in)
			}
			if !in.HasUsage && in.Usage != 0 || !in.HasBlocks && (in.Blocks != 0 || in.BlockSize != 0) ||
				!in.HasPrefix && (in.PrefixQueries != 0 || in.PrefixHits != 0) {
				t.Fatalf("field set without its flag in %+v", in)
			}
		}
	})
}
