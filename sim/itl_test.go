package sim

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/workload"
)

// itlOracle runs c on reqs step by step (no fast paths) and returns every
// inter-token gap (seconds) as the test sees it from outside the
// accounting: after each step, a request whose generated count grew got
// that many new tokens at the step's end (one a step), and the gap is
// from its previous token, one per sample.
func itlOracle(t *testing.T, c Config, reqs []workload.Request) []float64 {
	t.Helper()
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	last := make([]int64, len(e.reqs))
	seen := make([]bool, len(e.reqs))
	gen := make([]int, len(e.reqs))
	var gaps []float64
	stepThrough(t, e, 100_000, func() {
		for i := range e.reqs {
			r := &e.reqs[i]
			if r.gen == gen[i] {
				continue
			}
			if r.gen != gen[i]+1 {
				t.Fatalf("request %s made %d tokens in one step", r.id, r.gen-gen[i])
			}
			gen[i] = r.gen
			if seen[i] {
				for range r.n {
					gaps = append(gaps, float64(e.now-last[i])/1e9)
				}
			}
			last[i], seen[i] = e.now, true
		}
	})
	slices.Sort(gaps)
	return gaps
}

// TestITLMatchesOracle: the engine's ITL (its histogram, with and without
// the decode-run fast path, and a recording retimed under its own
// profile) is the oracle's nearest-rank p50 and p99 within the
// histogram's 0.1%, never below, for each engine, under the roofline and
// a profile, with arrivals that interrupt decoding.
func TestITLMatchesOracle(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "a100-40g")
	var reqs []workload.Request
	for i := range 60 {
		reqs = append(reqs, workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * int64(37*time.Millisecond),
			PromptTokens: 50 + 97*i%1500, OutputTokens: 1 + i%9*30, N: 1})
	}
	for _, engine := range []EngineKind{EngineVLLMV1, EngineVLLMV0, EngineSGLang} {
		for _, prof := range []bool{false, true} {
			name := fmt.Sprintf("%v profile %v", engine, prof)
			c := DefaultConfig(m, g)
			c.Engine, c.ChunkedPrefill = engine, engine != EngineVLLMV0
			if prof {
				p, err := PriorProfile("a100-40g", engine, "")
				if err != nil {
					t.Fatal(err)
				}
				c.Profile = p
			}
			gaps := itlOracle(t, c, reqs)
			if len(gaps) < 1000 {
				t.Fatalf("%s: %d gaps", name, len(gaps))
			}
			_, res := runEngine(t, c, reqs)
			for _, q := range []struct {
				name      string
				got, want float64
			}{{"p50", res.ITL.P50, nearestRank(gaps, 0.5)}, {"p99", res.ITL.P99, nearestRank(gaps, 0.99)}} {
				if q.got < q.want || q.got > q.want*1.001 {
					t.Errorf("%s: ITL %s %.6f ms, oracle %.6f ms", name, q.name, q.got*1e3, q.want*1e3)
				}
			}
			rc, err := Record(c, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := rc.Retime(c.Profile); got.ITL != res.ITL {
				t.Errorf("%s: retimed ITL %+v, run %+v", name, got.ITL, res.ITL)
			}
		}
	}
}

// TestITLShowsStalls: under vLLM V0 without chunked prefill a prompt runs
// in a step of its own while the others' decoding waits, so the gaps
// that span it are longer; the ITL's p99 is such a gap while the median
// is a plain decode step, and the TPOT (a mean per request) hides it.
func TestITLShowsStalls(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "a100-40g")
	c := DefaultConfig(m, g)
	c.Engine, c.ChunkedPrefill = EngineVLLMV0, false
	reqs := []workload.Request{{ID: "long", PromptTokens: 100, OutputTokens: 400, N: 1}}
	for i := range 8 {
		reqs = append(reqs, workload.Request{ID: fmt.Sprintf("p%d", i), Arrival: int64(i+1) * int64(500*time.Millisecond),
			PromptTokens: 4000, OutputTokens: 2, N: 1})
	}
	_, res := runEngine(t, c, reqs)
	gaps := itlOracle(t, c, reqs)
	if n := len(gaps); n != 399+8 {
		t.Fatalf("%d gaps, want 407", n)
	}
	if res.ITL.P99 < 5*res.ITL.P50 {
		t.Errorf("ITL p99 %.2f ms not a stall against p50 %.2f ms", res.ITL.P99*1e3, res.ITL.P50*1e3)
	}
	if res.TPOT.P99 > 2*res.ITL.P50 || math.IsNaN(res.TPOT.P99) {
		t.Errorf("TPOT p99 %.2f ms: the stalls should average away against ITL p50 %.2f ms", res.TPOT.P99*1e3, res.ITL.P50*1e3)
	}
}
