package scrape

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

func parseFile(t *testing.T, path string) []Instance {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	insts, err := Parse(f, path)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return insts
}

// TestGolden compares Parse's result on each hand-written exposition with
// the reviewed JSON next to it.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.prom"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.prom: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got, err := json.MarshalIndent(parseFile(t, path), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(path, ".prom") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it, then review it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n got %s\nwant %s", path, golden, got, want)
			}
		})
	}
}

// TestMapping states the expected fields directly, independent of the golden
// files, for the cases that exercise each rule of the mapping.
func TestMapping(t *testing.T) {
	v1 := Instance{
		Engine: VLLM, Model: "example-org/chat-8b", Labels: map[string]string{"engine": "0"},
		HasUsage: true, Usage: 0.6875,
		HasBlocks: true, Blocks: 27910, BlockSize: 16,
		HasPreemptions: true, Preemptions: 17,
		HasPrefix: true, PrefixQueries: 1048576, PrefixHits: 393216,
	}
	dp := func(engine string, usage float64, blocks int, pre, q, h float64) Instance {
		return Instance{
			Engine: VLLM, Model: "example-org/moe-30b", Labels: map[string]string{"engine": engine},
			HasUsage: true, Usage: usage, HasBlocks: true, Blocks: blocks, BlockSize: 32,
			HasPreemptions: true, Preemptions: pre, HasPrefix: true, PrefixQueries: q, PrefixHits: h,
		}
	}
	sgLabels := map[string]string{"engine_type": "unified", "pp_rank": "0", "tp_rank": "0"}
	for file, want := range map[string][]Instance{
		"vllm_v1.prom": {v1},
		"vllm_v1_dp2.prom": {
			dp("0", 0.25, 9000, 0, 65536, 16384),
			dp("1", 0.9375, 8800, 42, 131072, 98304),
		},
		// No engine label anywhere: the one cache_config_info applies.
		"vllm_v0.prom": {{
			Engine: VLLM, Model: "/models/llama-7b",
			HasUsage: true, Usage: 0.0411, HasBlocks: true, Blocks: 7434, BlockSize: 16,
			HasPreemptions: true, Preemptions: 3,
		}},
		"vllm_starting.prom": {{Engine: VLLM, Model: "tiny", Labels: map[string]string{"engine": "0"}, HasUsage: true}},
		"sglang.prom": {{
			Engine: SGLang, Model: "example-org/chat-70b", Labels: sgLabels,
			HasUsage: true, Usage: 0.375, HasBlocks: true, Blocks: 16384, BlockSize: 16,
			HasPreemptions: true, Preemptions: 9, HasPrefixHitRate: true, PrefixHitRate: 0.125,
		}},
		// No token_usage and no page_size: usage from the token counts,
		// one-token blocks.
		"sglang_old.prom": {{
			Engine: SGLang, Model: "meta/some-8b",
			HasUsage: true, Usage: 12000.0 / 480000, HasBlocks: true, Blocks: 480000, BlockSize: 1,
			HasPrefixHitRate: true, PrefixHitRate: 0.0075,
		}},
	} {
		t.Run(file, func(t *testing.T) {
			got := parseFile(t, filepath.Join("testdata", file))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func parseString(s string) ([]Instance, error) {
	return Parse(strings.NewReader(s), "test.prom")
}

func TestPreferences(t *testing.T) {
	// The V1 names win over the deprecated ones when both are present,
	// whatever the order; each old name alone is used.
	got, err := parseString(`vllm:gpu_cache_usage_perc{model_name="m"} 0.5
vllm:kv_cache_usage_perc{model_name="m"} 0.25
vllm:num_preemptions{model_name="m"} 1
vllm:num_preemptions_total{model_name="m"} 2
vllm:gpu_prefix_cache_queries_total{model_name="m"} 10
vllm:gpu_prefix_cache_hits_total{model_name="m"} 5
vllm:prefix_cache_queries_total{model_name="m"} 100
vllm:prefix_cache_hits_total{model_name="m"} 50
`)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.Usage != 0.25 || g.Preemptions != 2 || g.PrefixQueries != 100 || g.PrefixHits != 50 {
		t.Errorf("newer names not preferred: %+v", g)
	}
	got, err = parseString(`vllm:gpu_cache_usage_perc{model_name="m"} 0.5
vllm:num_preemptions{model_name="m"} 1
vllm:gpu_prefix_cache_queries_total{model_name="m"} 10
`)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.Usage != 0.5 || g.Preemptions != 1 || g.HasPrefix {
		t.Errorf("old names: %+v (prefix needs both counters)", g)
	}
	// Two models in one exposition are two instances; the label-less
	// cache_config_info applies to both.
	got, err = parseString(`vllm:cache_config_info{block_size="8",num_gpu_blocks="100"} 1
vllm:kv_cache_usage_perc{model_name="b"} 0.1
vllm:kv_cache_usage_perc{model_name="a"} 0.2
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Model != "a" || got[1].Model != "b" || got[0].Blocks != 100 || got[1].BlockSize != 8 {
		t.Errorf("two models: %+v", got)
	}
	// SGLang pages of unknown size are not counted: the token total is.
	got, err = parseString("sglang:num_pages{model_name=\"m\"} 10\nsglang:max_total_num_tokens{model_name=\"m\"} 160\n")
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; !g.HasBlocks || g.Blocks != 160 || g.BlockSize != 1 || g.HasUsage {
		t.Errorf("num_pages without page_size: %+v", g)
	}
	// With page_size and no num_pages, the total is divided, rounding down.
	got, err = parseString("sglang:page_size{model_name=\"m\"} 16\nsglang:max_total_num_tokens{model_name=\"m\"} 170\n")
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.Blocks != 10 || g.BlockSize != 16 {
		t.Errorf("total / page_size: %+v", g)
	}
	// Exact duplicates are tolerated.
	if _, err := parseString("sglang:token_usage{model_name=\"m\"} 0.5\nsglang:token_usage{model_name=\"m\"} 0.5\n"); err != nil {
		t.Errorf("identical duplicate: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"syntax", "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:kv_cache_usage_perc{model_name=\"m\" 0.5\n",
			"scrape: test.prom:2: text format parsing error in line 2"},
		{"bad value", "# TYPE x gauge\nx 1\nx abc\n", "test.prom:3: "},
		{"histogram", "# TYPE vllm:kv_cache_usage_perc histogram\nvllm:kv_cache_usage_perc_bucket{le=\"+Inf\"} 1\nvllm:kv_cache_usage_perc_count 1\nvllm:kv_cache_usage_perc_sum 1\n",
			`vllm:kv_cache_usage_perc{}: type HISTOGRAM, want a gauge or counter`},
		{"usage above 1", `vllm:kv_cache_usage_perc{engine="0",model_name="m"} 1.5` + "\n",
			`scrape: test.prom: vllm:kv_cache_usage_perc{engine="0",model_name="m"}: value 1.5 is outside 0..1`},
		{"NaN", `sglang:token_usage{model_name="m"} NaN` + "\n", `sglang:token_usage{model_name="m"}: value NaN is not finite`},
		{"negative counter", `vllm:num_preemptions_total{model_name="m"} -1` + "\n", "value -1 is negative"},
		{"fractional tokens", `sglang:max_total_num_tokens{model_name="m"} 10.5` + "\n", "value 10.5 is not a whole number"},
		{"conflict", "vllm:kv_cache_usage_perc{model_name=\"m\",engine=\"0\"} 0.5\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.6\n",
			`vllm:kv_cache_usage_perc{engine="0",model_name="m"}: conflicting duplicate series: 0.5 and 0.6`},
		{"config conflict", "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"10\"} 1\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"11\"} 1\n",
			"conflicting duplicate series"},
		{"bad blocks", "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"many\"} 1\n",
			`vllm:cache_config_info{block_size="16",num_gpu_blocks="many"}: label num_gpu_blocks="many" is not an integer in 0..2^53`},
		{"zero block size", "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:cache_config_info{block_size=\"0\",num_gpu_blocks=\"1\"} 1\n",
			`label block_size="0" is not an integer in 1..2^53`},
		{"bad UTF-8", "sglang:token_usage{model_name=\"\xff\"} 0.5\n", `test.prom:1: text format parsing error in line 1: invalid label value "\xff"`},
		{"page size 0", "sglang:max_total_num_tokens{model_name=\"m\"} 16\nsglang:page_size{model_name=\"m\"} 0\n", "sglang:page_size is 0 for sglang model_name=\"m\""},
		{"used above total", "sglang:max_total_num_tokens{model_name=\"m\"} 16\nsglang:num_used_tokens{model_name=\"m\"} 17\n", "exceeds"},
		{"nothing known", "# TYPE up gauge\nup 1\n", "scrape: no vLLM or SGLang KV-cache metrics in test.prom (1 other metric families)"},
		{"empty", "", "scrape: no vLLM or SGLang KV-cache metrics in test.prom (0 other metric families)"},
		// Issue 13: a megabyte label is refused, and not echoed whole.
		{"huge model", `sglang:token_usage{model_name="` + strings.Repeat("m", 1<<20) + `"} 0.5` + "\n",
			`label model_name value "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"… (1048576 bytes): 1048576 bytes, over 4096`},
		{"huge bad count", "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"" +
			strings.Repeat("9", 100<<10) + "\"} 1\n", `… (102400 bytes) is not an integer`},
		// Issue 28: labels become label values; the format lets a value,
		// and a quoted name, hold control characters.
		{"ESC in a value", "sglang:token_usage{model_name=\"m\x1b]0;x\x07\"} 0.5\n",
			`sglang:token_usage{model_name="m\x1b]0;x\a"}: label model_name value "m\x1b]0;x\a": byte 1: control character U+001B`},
		{"newline in a value", `sglang:token_usage{model_name="m",tp_rank="0\n1"} 0.5` + "\n",
			`label tp_rank value "0\n1": byte 1: control character U+000A`},
		{"NUL in a value", "vllm:kv_cache_usage_perc{engine=\"\x00\",model_name=\"m\"} 0.5\n", `label engine value "\x00": byte 0: control character U+0000`},
		{"ESC in a name", "sglang:token_usage{model_name=\"m\",\"tp\x1b\"=\"0\"} 0.5\n", `label name "tp\x1b": byte 2: control character U+001B`},
		{"ESC in a name, quoted in messages", "vllm:kv_cache_usage_perc{\"a\x1b\"=\"0\",model_name=\"m\"} 1.5\n",
			`vllm:kv_cache_usage_perc{"a\x1b"="0",model_name="m"}: value 1.5 is outside 0..1`},
		{"labels together", `sglang:token_usage{model_name="m",a="` + strings.Repeat("a", 3000) + `",b="` + strings.Repeat("b", 3000) + `"} 0.5` + "\n",
			"the labels other than model_name are over 4096 bytes together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseString(tc.in)
			if err == nil {
				t.Fatalf("no error; got %+v", got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %.300q lacks %q", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes echoes the input", len(err.Error()))
			}
		})
	}
	if _, err := parseString(""); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("empty input: %v, want ErrNoMetrics", err)
	}
}
