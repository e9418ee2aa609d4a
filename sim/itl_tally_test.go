package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/gpufrag/gpufrag/workload"
)

// tallyOf counts gaps (ns) in an itlTally and returns its latency next
// to the nearest-rank p50 and p99 of the same gaps.
func tallyOf(gaps []int64) (got, want Latency) {
	var t itlTally
	s := make([]float64, len(gaps))
	for i, g := range gaps {
		t.add(g, 1)
		s[i] = float64(g) / 1e9
	}
	slices.Sort(s)
	return t.latency(), Latency{P50: nearestRank(s, 0.5), P99: nearestRank(s, 0.99)}
}

// TestITLTallyNearestRank: the histogram's p99 is the nearest-rank one
// (rank ⌈0.99 N⌉), as every other latency of a Result is, not HDR's
// rounded rank (⌊0.99 N + 0.5⌋), which is one lower when 0.99 N has a
// fraction below a half: with 160 gaps, 158 short and 2 long, the
// nearest-rank p99 (the 159th) is a long one.
func TestITLTallyNearestRank(t *testing.T) {
	var gaps []int64
	for i := range 160 {
		g := int64(10_000_000)
		if i >= 158 {
			g = 100_000_000
		}
		gaps = append(gaps, g)
	}
	got, want := tallyOf(gaps)
	for _, q := range []struct {
		name string
		g, w float64
	}{{"p50", got.P50, want.P50}, {"p99", got.P99, want.P99}} {
		if q.g < q.w || q.g > q.w*1.001 {
			t.Errorf("%s %.9f s, nearest rank %.9f s", q.name, q.g, q.w)
		}
	}
}

// TestITLTallyPrecision: within 0.1% and never below for gaps from 1 µs
// up (short decode steps of a small model are well under a millisecond).
func TestITLTallyPrecision(t *testing.T) {
	for _, g := range []int64{1_000, 1_999, 37_123, 200_300, 523_777, 1_000_001, 25_123_457, 3_000_000_017} {
		got, _ := tallyOf([]int64{g})
		w := float64(g) / 1e9
		if got.P50 < w || got.P50 > w*1.001 || got.P99 != got.P50 {
			t.Errorf("gap %d ns: p50 %.9f s, p99 %.9f s", g, got.P50, got.P99)
		}
	}
}

// TestITLMatchesOracleEdges: the oracle's gaps (every one, nearest rank)
// under preemption, requests of several samples, prefill-only and
// one-token requests, and schedule overlap; a recording retimed under
// its own profile gives the run's ITL.
func TestITLMatchesOracleEdges(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "a100-40g")
	var reqs []workload.Request
	for i := range 50 {
		reqs = append(reqs, workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: int64(i) * int64(11*time.Millisecond),
			PromptTokens: 50 + 97*i%900, OutputTokens: i % 7 * 40, N: 1 + i%3})
	}
	for _, tc := range []struct {
		name    string
		engine  EngineKind
		kvGiB   float64
		overlap bool
	}{{"v1 preempting", EngineVLLMV1, 16.8, false}, {"v0 preempting", EngineVLLMV0, 16.8, false},
		{"sglang overlap", EngineSGLang, 0, true}, {"v1 overlap preempting", EngineVLLMV1, 16.8, true}} {
		c := DefaultConfig(m, g)
		c.Engine, c.ChunkedPrefill = tc.engine, tc.engine != EngineVLLMV0
		if tc.kvGiB > 0 {
			c.GPUMemoryUtilization = tc.kvGiB / 39.6
		}
		p, err := PriorProfile("a100-40g", tc.engine, "")
		if err != nil {
			t.Fatal(err)
		}
		p.Overhead.ScheduleOverlap = tc.overlap
		c.Profile = p
		gaps := itlOracle(t, c, reqs)
		_, res := runEngine(t, c, reqs)
		if tc.kvGiB > 0 && res.Preemptions == 0 {
			t.Errorf("%s: no preemption", tc.name)
		}
		for _, q := range []struct {
			name      string
			got, want float64
		}{{"p50", res.ITL.P50, nearestRank(gaps, 0.5)}, {"p99", res.ITL.P99, nearestRank(gaps, 0.99)}} {
			if q.got < q.want || q.got > q.want*1.001 {
				t.Errorf("%s: ITL %s %.6f ms, oracle %.6f ms (%d gaps)", tc.name, q.name, q.got*1e3, q.want*1e3, len(gaps))
			}
		}
		rc, err := Record(c, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := rc.Retime(c.Profile); got.ITL != res.ITL {
			t.Errorf("%s: retimed ITL %+v, run %+v", tc.name, got.ITL, res.ITL)
		}
	}
}

// TestITLSameBucket: itlSameBucket agrees with the histogram's own
// ValuesAreEquivalent over gaps from 1 ns to 10⁶ s, at bucket edges and
// at random, so that merging a run of gaps records what recording each
// would.
func TestITLSameBucket(t *testing.T) {
	h := hdrhistogram.New(itlLowestNs, itlHighestNs, itlDigits)
	r := rand.New(rand.NewPCG(1, 2))
	check := func(a, b int64) {
		if got, want := itlSameBucket(a, b), h.ValuesAreEquivalent(a, b); got != want {
			t.Fatalf("itlSameBucket(%d, %d) = %v, the histogram says %v", a, b, got, want)
		}
	}
	for e := 0; e < 50; e++ {
		v := int64(1) << e
		for _, d := range []int64{-2, -1, 0, 1, 2} {
			for _, w := range []int64{-1, 0, 1, v >> 11, v >> 10} {
				if a, b := v+d, v+d+w; a >= itlLowestNs && b >= itlLowestNs && a <= itlHighestNs && b <= itlHighestNs {
					check(a, b)
				}
			}
		}
	}
	for range 200_000 {
		a := int64(math.Exp(r.Float64() * math.Log(itlHighestNs)))
		b := a + int64(r.NormFloat64()*float64(a)/1000)
		if a >= itlLowestNs && b >= itlLowestNs && b <= itlHighestNs {
			check(a, b)
		}
	}
}

// TestITLOverFrom: the early stop's threshold agrees with the p99 the
// histogram reports: a gap of itlOverFrom(l) ns alone has a p99 over l
// seconds, one a nanosecond shorter has not.
func TestITLOverFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p99Of := func(v int64) float64 {
		h := hdrhistogram.New(itlLowestNs, itlHighestNs, itlDigits)
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		return itlRank(h, 0.99)
	}
	limits := []float64{1e-9, 2.047e-6, 2.048e-6, 0.1, 0.05, 1, 123.456}
	for range 2000 {
		limits = append(limits, math.Exp(r.Float64()*math.Log(1e5))*1e-6) // 1 µs to 0.1 s
	}
	for _, l := range limits {
		v := itlOverFrom(l)
		if v < 1 || v > itlHighestNs {
			t.Fatalf("itlOverFrom(%v) = %d: out of range", l, v)
		}
		if p := p99Of(v); !(p > l) {
			t.Fatalf("itlOverFrom(%v) = %d, whose p99 is %v: not over", l, v, p)
		}
		if p := p99Of(v - 1); p > l {
			t.Fatalf("itlOverFrom(%v) = %d, but %d has p99 %v: over already", l, v, v-1, p)
		}
	}
	if v := itlOverFrom(2e6); v != math.MaxInt64 {
		t.Errorf("a limit past the histogram's range: %d, want never", v)
	}
}
