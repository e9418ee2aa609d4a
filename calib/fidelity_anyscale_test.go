package calib

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestPyMT holds the Mersenne Twister to CPython 3.11's random module:
// random.seed(0xCADE); [random.randint(10, 50000) for _ in range(5)];
// random.random().
func TestPyMT(t *testing.T) {
	var m pyMT
	m.seedInt(0xCADE)
	var got []int
	for range 5 {
		got = append(got, m.randint(10, 50000))
	}
	if want := []int{15316, 7116, 41059, 27999, 25081}; !slices.Equal(got, want) {
		t.Errorf("randint(10, 50000) × 5 after seed(0xCADE) = %v, want %v", got, want)
	}
	if r := m.random(); r != 0.02068305909620205 {
		t.Errorf("random() then = %v, want 0.02068305909620205", r)
	}
}

// TestAnyscaleLengths checks the redrawn runs. The one independent
// check is the 32-token run: issue #4 of the repository prints the run's
// log, response_token_count 15610 over 1,000 requests (the server counts
// max(len, 1) tokens a request). The other sums and prefixes are CPython
// 3.11's of the same algorithm (benchmark_throughput.py's draws, run with
// NumPy's legacy seeding and exponential written out), a guard against a
// change here.
func TestAnyscaleLengths(t *testing.T) {
	cases := []struct {
		respRange, sum int
		head           []int
	}{
		{32, 15610, []int{23, 12, 9, 1, 13, 11, 15, 5, 3, 14, 9, 11}},
		{128, 54331, []int{23, 12, 85, 95, 127, 9, 41, 87, 92, 114, 69, 64}},
		{512, 122108, []int{437, 174, 23, 12, 85, 337, 95, 127, 130, 131, 9, 41}},
		{1536, 129570, []int{437, 174, 23, 12, 85, 337, 95, 127, 130, 131, 9, 41}},
	}
	for _, c := range cases {
		in, out := fidAnyscaleLens(fidAnyscaleRun{promptMean: 512, n: 1000, respMean: 128, respRange: c.respRange})
		if len(in) != 1000 || len(out) != 1000 {
			t.Fatalf("range %d: %d prompts, %d outputs", c.respRange, len(in), len(out))
		}
		sum := 0
		for i := range in {
			if in[i] != 512 {
				t.Fatalf("range %d: prompt %d has %d tokens, want 512", c.respRange, i, in[i])
			}
			sum += max(out[i], 1)
		}
		if sum != c.sum {
			t.Errorf("range %d: output tokens %d, want %d", c.respRange, sum, c.sum)
		}
		if !slices.Equal(out[:len(c.head)], c.head) {
			t.Errorf("range %d: first outputs %v, want %v", c.respRange, out[:len(c.head)], c.head)
		}
	}
}

// TestAnyscaleFigures checks the source's figures against the redrawn
// runs: each output throughput is the printed (prompt + output)
// throughput × output ÷ (prompt + output) tokens of the run, and each
// figure translates into a simulation of its run with the harness's
// sleep.
func TestAnyscaleFigures(t *testing.T) {
	pub, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pub.Figures {
		f := &pub.Figures[i]
		if f.Source != fidAnyscaleSource {
			continue
		}
		n++
		w := f.Setup.Workload
		_, out := fidAnyscaleLens(fidAnyscaleRun{promptMean: w.InputLen, n: w.NumPrompts, respMean: w.OutputLen, respRange: w.MaxTokens})
		tokens := w.InputLen * w.NumPrompts
		for _, o := range out {
			tokens += max(o, 1)
		}
		if got := tokens - w.InputLen*w.NumPrompts; w.TotalOutputTokens != got {
			t.Errorf("%s: total_output_tokens %d, the redrawn run has %d", f.ID, w.TotalOutputTokens, got)
		}
		// The client's figure, (prompt + output tokens) ÷ span, from the
		// output throughput recorded: the whole number the table prints
		// (the 32-token log's 5751.92, 2 decimals).
		tps := f.Value * float64(tokens) / float64(w.TotalOutputTokens)
		want := fmt.Sprintf("%.0f tok/s", math.Round(tps))
		if strings.Contains(f.Ref, ", log vllm_range_") {
			want = fmt.Sprintf("tokens_per_s %.2f", tps)
		} else if math.Abs(tps-math.Round(tps)) > 1e-6 {
			t.Errorf("%s: %v tok/s × %d tokens ÷ %d output = %v tok/s, not a whole number", f.ID, f.Value, tokens, w.TotalOutputTokens, tps)
		}
		if !strings.Contains(f.Precision, want) {
			t.Errorf("%s: the client's throughput is %v tok/s; the precision (%q) does not name %q", f.ID, tps, f.Precision, want)
		}
		p, err := fidTranslate(f, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", f.ID, err)
		}
		if p.skip != "" || p.sim == nil {
			t.Fatalf("%s: not simulated: %s", f.ID, p.skip)
		}
		if len(p.sim.reqs) != w.NumPrompts || p.sim.cfg.Engine != sim.EngineVLLMV0 || p.sim.cfg.ChunkedPrefill ||
			p.sim.cfg.MaxBatchTokens != w.MaxNumBatchedTokens {
			t.Errorf("%s: %d requests, engine %v, chunked %v, %d batched tokens", f.ID, len(p.sim.reqs), p.sim.cfg.Engine, p.sim.cfg.ChunkedPrefill, p.sim.cfg.MaxBatchTokens)
		}
		v, ok := p.pick(&sim.Result{SimulatedSeconds: 100, Steps: 1000, OutputTokens: 30000, OutputTokensPerS: 300})
		if want := 30000 / (100 + 1000*fidAnyscaleSleepNs/1e9); !ok || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s: picked %v from 30,000 tokens in 100 s and 1,000 steps, want %v (the sleep before each step)", f.ID, v, want)
		}
	}
	if n == 0 {
		t.Fatalf("no figure of source %s", fidAnyscaleSource)
	}
}
