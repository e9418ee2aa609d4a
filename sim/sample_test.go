package sim

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// TestKVAcc checks the KV breakdown accumulator: sums per field over
// samples, External only where it counts, and the shares of Result.
func TestKVAcc(t *testing.T) {
	var a kvAcc
	if got := a.shares(); got != (Shares{}) {
		t.Fatalf("shares of no sample: %+v, want zeros", got)
	}
	u := strategy.Breakdown{TokenStates: 60, Reservation: 20, Internal: 10, External: 10, CachedIdle: 30, Free: 70}
	a.add(u, true, 1)
	a.add(u, false, 1) // External does not count for this sample
	want := kvAcc{tokenStates: 120, reservation: 40, internal: 20, external: 10, cachedIdle: 60, footprint: 2 * 190}
	if a != want {
		t.Fatalf("after two samples: %+v, want %+v", a, want)
	}
	got := a.shares()
	wantShares := Shares{TokenStates: 120.0 / 190, Reservation: 40.0 / 190, Internal: 20.0 / 190, External: 10.0 / 190,
		CachedIdle: 60.0 / 380}
	if got != wantShares {
		t.Fatalf("shares %+v, want %+v", got, wantShares)
	}
}

// TestAddRepeated: adding x k times in one call gives, bit for bit, the sum
// of k float64 additions, whether the sums stay exact (the shortcut) or
// round (sums past 2^53 in units finer than their spacing, where it adds k
// times).
func TestAddRepeated(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Bytes in units of 2^unit, from one byte to 2 MiB, up to 2^40
		// units; a start sum already past 2^53 half the time.
		unit := rapid.IntRange(0, 21).Draw(t, "unit")
		x := rapid.Int64Range(0, 1<<40).Draw(t, "x") << unit >> rapid.IntRange(0, 20).Draw(t, "shift")
		var a float64
		if rapid.Bool().Draw(t, "big") {
			a = float64(rapid.Int64Range(1<<52, 1<<60).Draw(t, "a"))
		} else {
			a = float64(rapid.Int64Range(0, 1<<40).Draw(t, "a") << unit)
		}
		k := rapid.Int64Range(0, 5000).Draw(t, "k")
		want := a
		for range k {
			want += float64(x)
		}
		got := a
		addRepeated(&got, x, k)
		if got != want {
			t.Fatalf("%v + %d × %d: %v in one call, %v by %d additions", a, x, k, got, want, k)
		}
	})
	// 2^53 plus 1 four times stays 2^53 (each addition rounds to even),
	// where one multiplication would give the exact 2^53 + 4.
	a := float64(1 << 53)
	addRepeated(&a, 1, 4)
	if a != 1<<53 {
		t.Fatalf("2^53 plus 1 four times: %v, want %v", a, float64(1<<53))
	}
	a = math.Ldexp(1, 60)
	addRepeated(&a, 1<<20, 1000) // exact: every partial sum a multiple of 2^20 below 2^73
	if want := math.Ldexp(1, 60) + 1000*(1<<20); a != want {
		t.Fatalf("2^60 plus 2^20 a thousand times: %v, want %v", a, want)
	}
}

// TestSampleSpanChangesNothing: sampleSpan, which takes an interval's
// samples in one go and skips those a later thinning would drop, gives
// exactly the series, fragmentation quantiles, KV shares, minimum health,
// interval and defrag decisions of the loop that takes them one by one and
// thins as it goes, on runs with idle gaps of up to thousands of samples and
// a series bound of 2 to 64 samples, so that one gap crosses many
// thinnings.
func TestSampleSpanChangesNothing(t *testing.T) {
	var thinned, runs int
	rapid.Check(t, func(t *rapid.T) {
		c := drawConfig(t)
		c.Defrag.Policy = DefragPolicy(rapid.SampledFrom([]int{0, 0, 1, 2, 3, 4}).Draw(t, "defrag"))
		if c.Duration > 0 {
			c.Duration = int64(rapid.IntRange(1, 60_000).Draw(t, "duration-ms")) * int64(time.Millisecond)
		}
		reqs := drawRequests(t)
		var shift int64
		for i := range reqs {
			if rapid.IntRange(0, 3).Draw(t, "idle") == 0 {
				shift += int64(rapid.IntRange(0, 20_000).Draw(t, "idle-ms")) * int64(time.Millisecond)
			}
			reqs[i].Arrival += shift
		}
		maxSamples := 2 * rapid.IntRange(1, 32).Draw(t, "max-samples/2")
		var res [2]Result
		var taken [2]int64
		for i, bulk := range []bool{true, false} {
			e, err := New(c, reqs)
			if err != nil {
				return // a config that cannot run
			}
			e.samp.max, e.samp.bulk = maxSamples, bulk
			if res[i], err = e.Run(); err != nil {
				t.Fatalf("Run (bulk %v): %v", bulk, err)
			}
			taken[i] = e.samp.taken
		}
		if !reflect.DeepEqual(res[0], res[1]) || taken[0] != taken[1] {
			t.Fatalf("sampled in spans (%d taken):\n%+v\none by one (%d taken):\n%+v", taken[0], res[0], taken[1], res[1])
		}
		runs++
		if res[0].SampleIntervalS >= 4*float64(c.SampleInterval)/1e9 {
			thinned++ // at least twice
		}
	})
	// Vacuous unless runs were thinned several times.
	if thinned < runs/4 {
		t.Fatalf("%d of %d runs thinned at least twice", thinned, runs)
	}
	t.Logf("%d of %d runs thinned at least twice", thinned, runs)
}

// TestSampleWorkFollowsEvents: a run of three requests over 1,000 hours and
// over 100,000 hours does the same steps and the same sampling iterations,
// one per call at most (a step, an idle wait, the end); only the samples
// taken, which cost one float64 addition each at most, follow the
// simulated time. Sampled one by one, the long run took 5.8 million
// iterations.
func TestSampleWorkFollowsEvents(t *testing.T) {
	const hour = int64(time.Hour)
	var iters [2]int64
	for i, d := range []int64{1000 * hour, 100_000 * hour} {
		c := tinyConfig(mem.GiB)
		c.Duration = d
		reqs := []workload.Request{{ID: "a", PromptTokens: 100, OutputTokens: 20, N: 1},
			{ID: "b", Arrival: d / 2, PromptTokens: 100, OutputTokens: 20, N: 1},
			{ID: "c", Arrival: d - hour, PromptTokens: 100, OutputTokens: 20, N: 1}}
		e, res := runEngine(t, c, reqs)
		if res.RequestsCompleted != 3 {
			t.Fatalf("%dh: %d of 3 requests completed", d/hour, res.RequestsCompleted)
		}
		iters[i] = e.samp.iters
		if limit := res.Steps + 2*int64(len(reqs)) + 2; e.samp.iters > limit {
			t.Errorf("%dh: %d sampling iterations for %d steps and %d requests (%d samples taken), want at most %d",
				d/hour, e.samp.iters, res.Steps, len(reqs), e.samp.taken, limit)
		}
		if want := len(res.Series.Time); want > MaxSamples || int64(want) > e.samp.taken {
			t.Errorf("%dh: %d samples kept of %d taken, want at most %d", d/hour, want, e.samp.taken, MaxSamples)
		}
	}
	if iters[0] != iters[1] {
		t.Errorf("sampling iterations: %d over 1,000 hours, %d over 100,000 hours; want the same", iters[0], iters[1])
	}
}
