// Sampling: the memory time series, the fragmentation samples and the KV
// breakdown accumulated over samples. See doc.go, step 6.

package sim

import (
	"fmt"
	"math/bits"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// sampler is the state of the periodic samples.
type sampler struct {
	next      int64     // time of the next sample
	frag      []float64 // every kept sample's fragmentation rate (thinned with the series)
	kv        kvAcc
	healthMin float64     // the least health over every sample taken (thinning keeps it)
	memo      metricsMemo // fastpath.go
	// max is the series' bound, MaxSamples (tests lower it; even).
	max int
	// bulk takes the samples due at one interval in one go (a fast path:
	// noFastPaths turns it off, and sampleUntil then takes them one by
	// one, as it always did).
	bulk bool
	// iters counts sampleUntil's loop iterations; taken the samples taken
	// (tests check that the first follows the engine's events, not the
	// simulated time).
	iters, taken int64
}

// kvAcc sums the strategy's KV breakdown (strategy.Breakdown) over every
// sample taken, for Result.KVBreakdown.
type kvAcc struct {
	tokenStates, reservation, internal, external, cachedIdle, footprint float64
}

// add adds one sample's breakdown k times, as k calls of one sample each
// would. external says whether the breakdown's External counts: only
// contiguous KV lives among the allocator's other blocks, so only for it
// are the segments' free holes KV's external fragmentation; a paged pool or
// vmm ranges have none (their allocator's holes still show in frag_rate and
// health).
func (a *kvAcc) add(u strategy.Breakdown, external bool, k int64) {
	addRepeated(&a.tokenStates, u.TokenStates, k)
	addRepeated(&a.reservation, u.Reservation, k)
	addRepeated(&a.internal, u.Internal, k)
	if external {
		addRepeated(&a.external, u.External, k)
	}
	addRepeated(&a.cachedIdle, u.CachedIdle, k)
	addRepeated(&a.footprint, u.Footprint(), k)
}

// addRepeated adds x to *a k times, each addition rounded as float64 addition
// rounds. When every partial sum is exact (a whole multiple of 2^z below
// 2^(53+z), where 2^z divides both *a and x), the k additions are one
// multiplication and one addition of whole numbers; otherwise it adds k
// times. The sums of bytes are exact unless a run keeps tens of GiB for
// days of samples with bytes counted in small units: the KV and the
// allocator count in blocks of at least 512 bytes.
func addRepeated(a *float64, x int64, k int64) {
	if k > 1 && x >= 0 && *a >= 0 && *a < 1<<62 {
		// s, and x × k and s + x × k checked for overflow below, are below
		// 2^62; 2^62 is in the OR so that z ≤ 62.
		s := uint64(*a) // a whole number: a sum of whole numbers kept exact
		if hi, lo := bits.Mul64(uint64(x), uint64(k)); hi == 0 && lo < 1<<62 && s+lo < 1<<62 {
			z := bits.TrailingZeros64(s | uint64(x) | 1<<62)
			if float64(s) == *a && (z >= 9 || s+lo < 1<<(53+z)) {
				*a = float64(s + lo)
				return
			}
		}
	}
	for range k {
		*a += float64(x)
	}
}

// shares are the vLLM paper's shares of KV memory over the samples: token
// states, reservation, internal and external fragmentation of what KV
// holds, and cached idle blocks of the footprint.
func (a *kvAcc) shares() Shares {
	denom := a.tokenStates + a.reservation + a.internal + a.external
	return Shares{TokenStates: share(a.tokenStates, denom), Reservation: share(a.reservation, denom),
		Internal: share(a.internal, denom), External: share(a.external, denom), CachedIdle: share(a.cachedIdle, a.footprint)}
}

// sampleUntil records the state for every sample time up to t.
func (e *Engine) sampleUntil(t int64) {
	sp := &e.samp
	if sp.next > t {
		return
	}
	st := e.al.Stats()
	health := sp.memo.health(e.al)
	v := sample{reserved: st.Reserved, allocated: st.Allocated, requested: st.Requested, health: health,
		running: len(e.running), waiting: e.waiting.len()}
	u := e.kv.Usage()
	v.kvHeld = u.Held()
	if sp.bulk {
		sp.iters++
		taken := e.sampleSpan(v, t)
		sp.taken += taken
		sp.kv.add(u, e.contiguous, taken)
	} else {
		for sp.next <= t {
			sp.iters++
			e.appendSamples(v, sp.next, e.cfg.SampleInterval, 1)
			sp.next += e.cfg.SampleInterval
			sp.taken++
			sp.kv.add(u, e.contiguous, 1)
			if len(e.res.Series.Time) >= sp.max {
				e.thinSamples(1)
			}
		}
	}
	sp.healthMin = min(sp.healthMin, health)
	if e.dg != nil {
		e.dg.unseen, e.dg.unseenFrag, e.dg.unseenHealth = true, 1-health, health
	}
}

// sample is the state one sample records.
type sample struct {
	reserved, allocated, requested, kvHeld int64
	health                                 float64
	running, waiting                       int
}

// sampleSpan is sampleUntil's loop in one go (a fast path): the state is
// the same at every sample time up to t, so it works out which samples the
// loop would take and which of them the thinnings it would do would keep,
// and appends only those. It returns how many the loop would take.
//
// Samples are at the multiples of the interval from 0, so the series holds
// len samples and the next is at len × interval. The loop thins when the
// series fills, at its sample max − 1, and goes on at twice the interval
// with max/2 samples: whatever len was, its j-th thinning from here
// (j ≥ 1) comes at time (max − 1) × interval × 2^(j−1), if t reaches it.
// After h thinnings the series holds the old samples at indices that are
// multiples of 2^h and every multiple of interval × 2^h from there to t.
func (e *Engine) sampleSpan(v sample, t int64) (taken int64) {
	sp := &e.samp
	iv := e.cfg.SampleInterval
	n, m := int64(len(e.res.Series.Time)), int64(sp.max)
	if invariants.Enabled && sp.next != n*iv {
		panic(fmt.Sprintf("sim: next sample at %d ns, not at %d samples × %d ns", sp.next, n, iv))
	}
	h := 0
	for lim, ivj := t/(m-1), iv; ivj <= lim; ivj *= 2 {
		h++
		if ivj > lim/2 {
			break // doubling ivj would pass lim (or overflow)
		}
	}
	if h == 0 {
		taken = t/iv - n + 1
	} else {
		ivf := iv << h
		// The first fill, h−1 refills of max/2 samples, then up to t.
		taken = m - n + int64(h-1)*m/2 + t/ivf + 1 - m/2
		e.thinSamples(h)
		iv = ivf
	}
	k := int64(len(e.res.Series.Time))
	e.appendSamples(v, k*iv, iv, t/iv+1-k)
	sp.next = (t/iv + 1) * iv
	return taken
}

// appendSamples appends n samples of v at times from, from + iv, ... ns.
func (e *Engine) appendSamples(v sample, from, iv, n int64) {
	s := &e.res.Series
	m := e.samp.max
	s.Time = grow(s.Time, n, m)
	for i := range n {
		s.Time = append(s.Time, float64(from+i*iv)/1e9)
	}
	s.Reserved = appendN(s.Reserved, v.reserved, n, m)
	s.Allocated = appendN(s.Allocated, v.allocated, n, m)
	s.Requested = appendN(s.Requested, v.requested, n, m)
	s.KVHeld = appendN(s.KVHeld, v.kvHeld, n, m)
	s.Health = appendN(s.Health, v.health, n, m)
	s.Running = appendN(s.Running, v.running, n, m)
	s.Waiting = appendN(s.Waiting, v.waiting, n, m)
	e.samp.frag = appendN(e.samp.frag, 1-v.health, n, m) // frag.FragRate
}

// appendN appends n copies of x to xs, which holds at most m.
func appendN[T any](xs []T, x T, n int64, m int) []T {
	xs = grow(xs, n, m)
	for range n {
		xs = append(xs, x)
	}
	return xs
}

// grow makes room for n more elements in xs, which never holds more than m
// (the series' bound): it doubles the capacity, up to m. A series grows one
// sample at a time for most of a run, and append's growth of large slices
// by a quarter copied each sample about four times over.
func grow[T any](xs []T, n int64, m int) []T {
	need := len(xs) + int(n)
	if need <= cap(xs) {
		return xs
	}
	c := max(min(2*cap(xs), m), need, 256)
	ys := make([]T, len(xs), c)
	copy(ys, xs)
	return ys
}

// MaxSamples bounds the memory time series of one run: when it holds this
// many samples, every second one is dropped and the interval doubles, so the
// series stays as if it had been sampled at the wider interval from the start
// (samples are at multiples of the interval from 0, and MaxSamples is even).
// A sample is 72 bytes over the series and the fragmentation samples, so a
// run keeps at most 72 MiB of them. 2^20 samples are 12 days at the default
// one per second: above every shipped scenario and experiment (the longest,
// a week, has 604,800), so none of them is thinned; --duration 100000h
// (3.6e8 samples, 26 GB before this bound) is.
const MaxSamples = 1 << 20

// thinSamples halves the series h times: it keeps the samples at indices
// that are multiples of 2^h and multiplies the sample interval by 2^h. The
// KV breakdown and the minimum health keep counting every sample taken.
func (e *Engine) thinSamples(h int) {
	k := 1 << h
	s := &e.res.Series
	s.Time = keepEvery(s.Time, k)
	s.Reserved = keepEvery(s.Reserved, k)
	s.Allocated = keepEvery(s.Allocated, k)
	s.Requested = keepEvery(s.Requested, k)
	s.KVHeld = keepEvery(s.KVHeld, k)
	s.Health = keepEvery(s.Health, k)
	s.Running = keepEvery(s.Running, k)
	s.Waiting = keepEvery(s.Waiting, k)
	e.samp.frag = keepEvery(e.samp.frag, k)
	e.cfg.SampleInterval <<= h
	e.res.SamplesThinned = true
}

// keepEvery moves the elements at indices that are multiples of k to the
// front of xs and returns them.
func keepEvery[T any](xs []T, k int) []T {
	n := 0
	for i := 0; i < len(xs); i += k {
		xs[n] = xs[i]
		n++
	}
	clear(xs[n:])
	return xs[:n]
}
