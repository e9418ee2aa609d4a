package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/workload"
)

// fragmentingRequests are many overlapping requests of varied lengths:
// contiguous-grow's reallocations on the caching allocator leave holes.
func fragmentingRequests(n int, seed uint64) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 1))
	reqs := make([]workload.Request, n)
	var at int64
	for i := range reqs {
		at += int64(rng.IntN(40)) * 1_000_000
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: at,
			PromptTokens: 16 + rng.IntN(900), OutputTokens: 1 + rng.IntN(400), N: 1}
	}
	return reqs
}

// checkNoStaleAddress checks that every live KV block the strategy knows
// is an active block of the same size at the same address in the
// allocator: no owner points at a place a compaction moved away from.
func checkNoStaleAddress(e *Engine) error {
	mv, ok := e.kv.(strategy.Movable)
	if !ok {
		return nil
	}
	active := map[uint64]int64{}
	for _, s := range e.al.Layout().Segments {
		for _, b := range s.Blocks {
			if b.State == mem.Active {
				active[b.Addr] = b.Size
			}
		}
	}
	for _, b := range mv.LiveBlocks(nil) {
		if size, ok := active[b.Addr]; !ok || size != b.Size {
			return fmt.Errorf("strategy block %d at %s (%d B) is not an active block of the allocator", b.Handle, mem.FormatAddr(b.Addr), b.Size)
		}
	}
	return nil
}

func TestDefragPolicies(t *testing.T) {
	// Under -short, -race or -tags invariants (the allocators check
	// themselves after every operation, and online compacts at every step)
	// a smaller run keeps CI fast; it still compacts.
	n, dur := 600, int64(30_000_000_000)
	if testing.Short() || invariants.Enabled {
		n, dur = 150, 8_000_000_000
	}
	reqs := fragmentingRequests(n, 7)
	for _, policy := range []DefragPolicy{DefragThreshold, DefragAdaptive, DefragOnline, DefragOffline} {
		t.Run(policy.String(), func(t *testing.T) {
			c := tinyConfig(320 * mem.MiB)
			c.KV, c.Alloc = kvOf("contiguous-grow"), allocOf("caching")
			c.Duration = dur // stop with requests live, to check their addresses
			c.SampleInterval = 100_000_000
			c.Defrag = Defrag{Policy: policy}
			e, err := New(c, reqs)
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			e.dg.check = func() {
				checked++
				if err := checkNoStaleAddress(e); err != nil {
					t.Fatalf("after compaction %d: %v", checked, err)
				}
			}
			res, err := e.Run()
			if err != nil {
				t.Fatal(err)
			}
			if err := checkAccounting(e, res); err != nil {
				t.Fatal(err)
			}
			d := res.Defrag
			if d == nil || d.Policy != policy.String() || d.Skipped != "" {
				t.Fatalf("defrag result %+v", d)
			}
			if d.Runs == 0 || d.BytesMoved == 0 {
				t.Fatalf("%s never compacted on a fragmenting workload: %+v (frag p99 %.2f)", policy, d, res.FragRate.P99)
			}
			if d.LowerBound > d.BytesMoved || d.LowerBound < 0 {
				t.Errorf("lower bound %d vs moved %d", d.LowerBound, d.BytesMoved)
			}
			if d.Pause.Max <= 0 || d.PauseTotal < d.Pause.Max {
				t.Errorf("pauses %+v total %v", d.Pause, d.PauseTotal)
			}
			if checked != d.Runs {
				t.Errorf("checked %d compactions of %d", checked, d.Runs)
			}
			if err := checkNoStaleAddress(e); err != nil {
				t.Fatal(err)
			}
			if err := checkClose(e); err != nil {
				t.Fatal(err)
			}
			// Same inputs, same JSON, compactions included.
			e2, err := New(c, reqs)
			if err != nil {
				t.Fatal(err)
			}
			res2, err := e2.Run()
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(res)
			b, _ := json.Marshal(res2)
			if string(a) != string(b) {
				t.Fatalf("two runs differ:\n%s\n%s", a, b)
			}
		})
	}
}

// Paged KV is one allocation and vmm maps pages: the policy says why it
// cannot act instead of pretending.
func TestDefragSkipped(t *testing.T) {
	for _, tc := range []struct{ kv, alloc string }{{"paged:16", "caching"}, {"contiguous-grow", "caching:expandable_segments:True"}, {"vmm:2MiB", "vmm:2MiB"}} {
		c := tinyConfig(256 * mem.MiB)
		c.KV, c.Alloc = kvOf(tc.kv), allocOf(tc.alloc)
		c.Defrag = Defrag{Policy: DefragThreshold}
		_, res := runEngine(t, c, fragmentingRequests(20, 3))
		if res.Defrag == nil || res.Defrag.Skipped == "" || res.Defrag.Runs != 0 {
			t.Errorf("%s on %s: %+v", tc.kv, tc.alloc, res.Defrag)
		}
	}
}

func TestParseDefragPolicy(t *testing.T) {
	for _, p := range []DefragPolicy{DefragOff, DefragThreshold, DefragAdaptive, DefragOnline, DefragOffline} {
		got, err := ParseDefragPolicy(p.String())
		if err != nil || got != p {
			t.Errorf("%v: %v %v", p, got, err)
		}
	}
	if _, err := ParseDefragPolicy("sometimes"); err == nil {
		t.Error("sometimes parsed")
	}
}

// overloadRequests are n requests arriving every 0 to gapMs ms with prompts
// of 16-1,515 tokens and outputs of 1-600: on 192 MiB of tiny-model KV
// (2,048-token context, 16 MiB a full sequence) most of them fail, and which
// ones depends on how free memory is handed out.
func overloadRequests(n int, seed uint64, gapMs int) []workload.Request {
	rng := rand.New(rand.NewPCG(seed, 2))
	reqs := make([]workload.Request, n)
	var at int64
	for i := range reqs {
		at += int64(rng.IntN(gapMs)) * 1_000_000
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: at,
			PromptTokens: 16 + rng.IntN(1500), OutputTokens: 1 + rng.IntN(600), N: 1}
	}
	return reqs
}

// TestDefragNoWorseThanOff: summed over seeded overloaded workloads of
// contiguous-grow on the caching allocator, with and without activation
// buffers, every policy completes at least as many requests as no
// compaction and fails no more with OOM errors. Before the fix, compaction
// for a failed admission handed packed memory to newcomers that the running
// requests needed to grow into (without activations every policy lost
// 2-5% of the completions), and the EmptyCache after every compaction sent
// the activation buffers' cached segments back to the device (online, which
// compacts before every step, lost 3-5% with activations).
func TestDefragNoWorseThanOff(t *testing.T) {
	longtest.Skip(t)
	// The claim is about the sum over these 12 seeds; a smaller set is
	// another claim (with 6 seeds online loses one request on
	// activations=true/gap=5ms). So -short and the self-checked builds keep
	// every seed and check half the configurations instead.
	if testing.Short() && invariants.Enabled {
		t.Skip("-race -short: a policy property of single-threaded runs that the -tags invariants run checks with every self-check on")
	}
	const seeds = uint64(12)
	for _, act := range []bool{false, true} {
		for _, gap := range []int{5, 20} {
			if (testing.Short() || invariants.Enabled) && gap != 20 {
				continue
			}
			t.Run(fmt.Sprintf("activations=%v/gap=%dms", act, gap), func(t *testing.T) {
				type sum struct{ done, oom int }
				sums := map[DefragPolicy]sum{}
				for seed := uint64(1); seed <= seeds; seed++ {
					reqs := overloadRequests(200, seed, gap)
					c := tinyConfig(192 * mem.MiB)
					c.KV, c.Alloc = kvOf("contiguous-grow"), allocOf("caching")
					c.Activations = act
					c.SampleInterval = 100_000_000
					for _, p := range []DefragPolicy{DefragOff, DefragThreshold, DefragAdaptive, DefragOnline, DefragOffline} {
						c.Defrag = Defrag{Policy: p}
						_, r := runEngine(t, c, reqs)
						s := sums[p]
						s.done += r.RequestsCompleted
						s.oom += r.RequestsFailedOOM
						sums[p] = s
					}
				}
				off := sums[DefragOff]
				for _, p := range []DefragPolicy{DefragThreshold, DefragAdaptive, DefragOnline, DefragOffline} {
					if s := sums[p]; s.done < off.done || s.oom > off.oom {
						t.Errorf("%s: %d completed, %d OOM; off: %d completed, %d OOM", p, s.done, s.oom, off.done, off.oom)
					}
				}
			})
		}
	}
}

// TestDefragQuietWindow holds the adaptive and online policies' own
// compactions to a quiet period: none while a request waits, and, with a
// window longer than the run, none after the first failed admission. The
// reactive compactions are off, so every compaction is the policy's own.
// (Without the window the same runs compact 27 and 1,670 times, most of them
// with requests waiting.)
func TestDefragQuietWindow(t *testing.T) {
	if testing.Short() && invariants.Enabled {
		t.Skip("-race -short: a policy property of single-threaded runs that the -tags invariants run checks with every self-check on")
	}
	for _, p := range []DefragPolicy{DefragAdaptive, DefragOnline} {
		t.Run(p.String(), func(t *testing.T) {
			runs, waited := 0, 0
			for seed := uint64(1); seed <= 4; seed++ {
				c := tinyConfig(256 * mem.MiB)
				c.KV, c.Alloc = kvOf("contiguous-grow"), allocOf("caching")
				c.SampleInterval = 100_000_000
				c.Defrag = Defrag{Policy: p, NoReactive: true, QuietWindow: 3_600_000_000_000}
				e, err := New(c, fragmentingRequests(600, seed))
				if err != nil {
					t.Fatal(err)
				}
				e.dg.check = func() {
					if n := e.waiting.len(); n > 0 {
						t.Errorf("seed %d: compacted at %d ns with %d requests waiting", seed, e.now, n)
					}
					if f := e.kv.Stats().AdmitFailures; f > 0 {
						t.Errorf("seed %d: compacted at %d ns after %d failed admissions, within the window", seed, e.now, f)
					}
				}
				res, err := e.Run()
				if err != nil {
					t.Fatal(err)
				}
				runs += res.Defrag.Runs
				if e.kv.Stats().AdmitFailures > 0 {
					waited++
				}
			}
			if waited == 0 {
				t.Fatal("no admission failed: the workload does not test the window")
			}
			if runs == 0 {
				t.Fatal("no compaction at all: the workload has no quiet period before its first failed admission")
			}
		})
	}
}
