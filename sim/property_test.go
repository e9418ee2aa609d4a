package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// propSetups pairs every KV strategy with allocators it runs on.
var propSetups = []struct{ kv, alloc string }{
	{"paged:16", "caching"},
	{"paged:16", "caching:expandable_segments:True"},
	{"paged:7", "sizeclass"},
	{"paged:16", "arena"},
	{"paged:32", "direct"},
	{"contiguous-max", "caching"},
	{"contiguous-max:pow2", "caching"},
	{"contiguous-max:oracle", "sizeclass"},
	{"contiguous-max:oracle", "async"},
	{"contiguous-grow", "caching"},
	{"contiguous-grow", "caching:expandable_segments:True"},
	{"contiguous-grow", "sizeclass"},
	{"contiguous-grow", "arena"},
	{"vmm:2MiB", "vmm:2MiB"},
	{"vmm:64KiB", "vmm:64KiB"},
}

// drawConfig draws an engine configuration for tinyModel on a small toy
// GPU, tight enough that memory runs out often.
func drawConfig(t *rapid.T) Config {
	s := propSetups[rapid.IntRange(0, len(propSetups)-1).Draw(t, "setup")]
	c := tinyConfig(int64(rapid.IntRange(16, 96).Draw(t, "capacity-mib")) * mem.MiB)
	c.KV, c.Alloc = kvOf(s.kv), allocOf(s.alloc)
	c.OnOOM = OnOOM(rapid.IntRange(int(OnOOMDefault), int(OnOOMFail)).Draw(t, "on-oom"))
	c.GPUMemoryUtilization = float64(rapid.IntRange(5, 100).Draw(t, "util-pct")) / 100
	c.Activations = rapid.Bool().Draw(t, "activations")
	c.ChunkedPrefill = rapid.Bool().Draw(t, "chunked")
	// Below maxN now and then: a request with more samples than the token
	// budget can never decode and must be rejected, not spun on.
	c.MaxBatchTokens = rapid.SampledFrom([]int{1, 3, 16, 100, 512, 2048}).Draw(t, "max-batch-tokens")
	c.MaxSeqs = rapid.IntRange(1, 16).Draw(t, "max-seqs")
	c.MaxContext = rapid.SampledFrom([]int{0, 300, 1024}).Draw(t, "max-context")
	c.MaxTokens = rapid.SampledFrom([]int{0, 50, 400}).Draw(t, "max-tokens")
	if rapid.IntRange(0, 3).Draw(t, "cut") == 0 {
		c.Duration = int64(rapid.IntRange(1, 300).Draw(t, "duration-ms")) * int64(time.Millisecond)
	}
	c.SampleInterval = int64(rapid.IntRange(1, 50).Draw(t, "sample-ms")) * int64(time.Millisecond)
	c.PrefixCaching = rapid.Bool().Draw(t, "prefix-caching")
	return c
}

const maxN = 4

// drawRequests draws a short request list sorted by arrival, some of whose
// prompts are longer than any context drawConfig uses.
//
// Under -short, -race or -tags invariants (where every allocator call checks
// the allocator's invariants) the lists are shorter.
func drawRequests(t *rapid.T) []workload.Request {
	maxReqs, maxOut := 24, 300
	if testing.Short() || invariants.Enabled {
		maxReqs, maxOut = 8, 100
	}
	n := rapid.IntRange(0, maxReqs).Draw(t, "requests")
	reqs := make([]workload.Request, n)
	var at int64
	for i := range reqs {
		at += int64(rapid.IntRange(0, 20).Draw(t, "gap-ms")) * int64(time.Millisecond)
		reqs[i] = workload.Request{
			ID:           fmt.Sprintf("r%d", i),
			Arrival:      at,
			PromptTokens: rapid.IntRange(1, 400).Draw(t, "prompt"),
			OutputTokens: rapid.IntRange(0, maxOut).Draw(t, "output"),
			N:            rapid.IntRange(1, maxN).Draw(t, "n"),
		}
		if rapid.IntRange(0, 7).Draw(t, "long") == 0 {
			reqs[i].PromptTokens = rapid.IntRange(401, 2100).Draw(t, "long-prompt")
		}
		if rapid.Bool().Draw(t, "prefix") {
			// Prefix ids per 512-token block, from a small alphabet so that
			// prompts share prefixes (paged's prefix cache hits).
			ids := make([]uint64, (reqs[i].PromptTokens+workload.PrefixBlockTokens-1)/workload.PrefixBlockTokens)
			for j := range ids {
				ids[j] = uint64(10*j + rapid.IntRange(0, 1).Draw(t, "prefix-id"))
			}
			reqs[i].PrefixHashes = ids
		}
	}
	return reqs
}

// runChecked builds and runs an engine; ok is false when the drawn config
// cannot run (ErrBadConfig: no memory left for KV, and the like).
func runChecked(t *rapid.T, c Config, reqs []workload.Request) (e *Engine, res Result, ok bool) {
	e, err := New(c, reqs)
	if err != nil {
		if !errors.Is(err, ErrBadConfig) {
			t.Fatalf("New: %v, want an ErrBadConfig", err)
		}
		return nil, Result{}, false
	}
	res, err = e.Run()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return e, res, true
}

// TestProperties runs random request lists on random configurations (every
// KV strategy, several allocators, every OOM policy, tight memory) and
// checks after each run that:
//
//	(a) every request that arrived ended in exactly one of completed, failed,
//	    rejected and unfinished, the counts add up to requests_total, and
//	    with no duration nothing is unfinished;
//	(b) no output token is lost or double counted: output_tokens = Σ gen × n
//	    over the requests, a completed request generated exactly its
//	    (truncated) output and every other request less than that, so with
//	    no duration output_tokens = Σ output × n over completed requests +
//	    Σ generated × n over failed and rejected ones;
//	(c) after Run and Close the strategy has no live sequence and the
//	    allocator holds nothing (blocks back in the pool, the pool and
//	    activations back in the allocator);
//	(d) the result is deterministic: a second run of the same inputs gives
//	    byte-identical JSON and deeply equal Series and Events;
//
// and that the summary is sane: shares in [0, 1] adding up to 1 when KV was
// held, peaks within the device, series columns of equal length.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawConfig(t)
		reqs := drawRequests(t)
		e, res, ok := runChecked(t, c, reqs)
		if !ok {
			return
		}
		if err := checkAccounting(e, res); err != nil {
			t.Fatalf("(a, b) %v", err)
		}
		if c.Duration == 0 {
			var want int64
			for i := range e.reqs {
				r := &e.reqs[i]
				switch r.ph {
				case phaseDone:
					want += int64(r.output) * int64(r.n)
				case phaseFailed, phaseRejected:
					want += int64(r.gen) * int64(r.n)
				}
			}
			if want != res.OutputTokens {
				t.Fatalf("(b) output tokens %d, completed and failed requests account for %d", res.OutputTokens, want)
			}
		}
		if err := checkSummary(e, res); err != nil {
			t.Fatalf("summary: %v", err)
		}
		if err := checkClose(e); err != nil {
			t.Fatalf("(c) %v", err)
		}

		_, res2, _ := runChecked(t, c, reqs)
		j1, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		j2, _ := json.Marshal(res2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("(d) JSON differs:\n%s\n%s", j1, j2)
		}
		if !reflect.DeepEqual(res.Series, res2.Series) {
			t.Fatalf("(d) series differ")
		}
		if !reflect.DeepEqual(res.Events, res2.Events) {
			t.Fatalf("(d) events differ:\n%v\n%v", res.Events, res2.Events)
		}
	})
}

// checkSummary checks the result's derived figures.
func checkSummary(e *Engine, res Result) error {
	st := e.Allocator().Stats()
	if res.PeakReservedBytes > st.Capacity-st.OtherUse {
		return fmt.Errorf("peak reserved %d above the device's %d free bytes", res.PeakReservedBytes, st.Capacity-st.OtherUse)
	}
	if res.PeakAllocatedBytes > res.PeakReservedBytes {
		return fmt.Errorf("peak allocated %d above peak reserved %d", res.PeakAllocatedBytes, res.PeakReservedBytes)
	}
	s := res.Series
	n := len(s.Time)
	for _, l := range []int{len(s.Reserved), len(s.Allocated), len(s.Requested), len(s.KVHeld), len(s.Health), len(s.Running), len(s.Waiting)} {
		if l != n {
			return fmt.Errorf("series columns of lengths %d and %d", n, l)
		}
	}
	for i := 1; i < n; i++ {
		if !(s.Time[i] > s.Time[i-1]) {
			return fmt.Errorf("series time goes from %v to %v", s.Time[i-1], s.Time[i])
		}
	}
	k := res.KVBreakdown
	parts := []float64{k.TokenStates, k.Reservation, k.Internal, k.External, k.CachedIdle,
		res.FragRate.P50, res.FragRate.P99, res.FragRate.Max, res.HealthMin}
	for _, v := range parts {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("share or ratio %v outside [0, 1] in %+v", v, res)
		}
	}
	if sum := k.TokenStates + k.Reservation + k.Internal + k.External; sum != 0 && math.Abs(sum-1) > 1e-9 {
		return fmt.Errorf("KV breakdown adds up to %v: %+v", sum, k)
	}
	if res.Steps > 0 && !(res.BatchSizeMean >= 1) {
		return fmt.Errorf("%d steps with batch mean %v", res.Steps, res.BatchSizeMean)
	}
	if res.SimulatedSeconds < 0 || (e.cfg.Duration > 0 && res.SimulatedSeconds > float64(e.cfg.Duration)/1e9) {
		return fmt.Errorf("simulated %v s with duration %d ns", res.SimulatedSeconds, e.cfg.Duration)
	}
	return nil
}

// TestMetamorphicPolicies replays one request list on generous memory under
// each OOM policy: when nothing ever runs out, the policies must not matter,
// and every request completes with its whole output.
func TestMetamorphicPolicies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reqs := drawRequests(t)
		for i := range reqs {
			reqs[i].PromptTokens = min(reqs[i].PromptTokens, 500)
		}
		var first []byte
		for _, oom := range []OnOOM{OnOOMPreempt, OnOOMFail} {
			// 426 MiB of KV in 213 blocks of 256 tokens: 24 requests of 4
			// samples need at most 24 × (2 + 4 × 2) blocks. Few blocks keep
			// the pool's invariant checks cheap.
			c := tinyConfig(512 * mem.MiB)
			c.KV = kvOf("paged:256")
			c.OnOOM = oom
			e, res, ok := runChecked(t, c, reqs)
			if !ok {
				t.Fatalf("config does not run")
			}
			if err := checkAccounting(e, res); err != nil {
				t.Fatal(err)
			}
			if res.RequestsCompleted != len(reqs) || res.Preemptions != 0 {
				t.Fatalf("on-oom %v: %d of %d completed, %d preemptions", oom, res.RequestsCompleted, len(reqs), res.Preemptions)
			}
			res.OnOOM = ""
			j, _ := json.Marshal(res)
			if first == nil {
				first = j
			} else if !bytes.Equal(first, j) {
				t.Fatalf("on-oom %v changes a run that never runs out of memory:\n%s\n%s", oom, first, j)
			}
		}
	})
}
