// Sampling: the memory time series, the fragmentation samples and the KV
// breakdown accumulated over samples. See doc.go, step 6.

package sim

import "github.com/gpufrag/gpufrag/kv/strategy"

// sampler is the state of the periodic samples.
type sampler struct {
	next      int64     // time of the next sample
	frag      []float64 // every kept sample's fragmentation rate (thinned with the series)
	kv        kvAcc
	healthMin float64     // the least health over every sample taken (thinning keeps it)
	memo      metricsMemo // fastpath.go
}

// kvAcc sums the strategy's KV breakdown (strategy.Breakdown) over every
// sample taken, for Result.KVBreakdown.
type kvAcc struct {
	tokenStates, reservation, internal, external, cachedIdle, footprint float64
}

// add adds one sample's breakdown. external says whether the breakdown's
// External counts: only contiguous KV lives among the allocator's other
// blocks, so only for it are the segments' free holes KV's external
// fragmentation; a paged pool or vmm ranges have none (their allocator's
// holes still show in frag_rate and health).
func (a *kvAcc) add(u strategy.Breakdown, external bool) {
	a.tokenStates += float64(u.TokenStates)
	a.reservation += float64(u.Reservation)
	a.internal += float64(u.Internal)
	if external {
		a.external += float64(u.External)
	}
	a.cachedIdle += float64(u.CachedIdle)
	a.footprint += float64(u.Footprint())
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
	fr := 1 - health // frag.FragRate
	u := e.kv.Usage()
	for sp.next <= t {
		s := &e.res.Series
		s.Time = append(s.Time, float64(sp.next)/1e9)
		s.Reserved = append(s.Reserved, st.Reserved)
		s.Allocated = append(s.Allocated, st.Allocated)
		s.Requested = append(s.Requested, st.Requested)
		s.KVHeld = append(s.KVHeld, u.Held())
		s.Health = append(s.Health, health)
		s.Running = append(s.Running, len(e.running))
		s.Waiting = append(s.Waiting, e.waiting.len())
		sp.frag = append(sp.frag, fr)
		if e.dg != nil {
			e.dg.unseen, e.dg.unseenFrag, e.dg.unseenHealth = true, fr, health
		}
		sp.kv.add(u, e.contiguous)
		sp.healthMin = min(sp.healthMin, health)
		sp.next += e.cfg.SampleInterval
		if len(s.Time) >= MaxSamples {
			e.thinSamples()
		}
	}
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

// thinSamples halves the series: it keeps the samples at even indices and
// doubles the sample interval. The KV breakdown and the minimum health keep
// counting every sample taken.
func (e *Engine) thinSamples() {
	s := &e.res.Series
	s.Time = keepEven(s.Time)
	s.Reserved = keepEven(s.Reserved)
	s.Allocated = keepEven(s.Allocated)
	s.Requested = keepEven(s.Requested)
	s.KVHeld = keepEven(s.KVHeld)
	s.Health = keepEven(s.Health)
	s.Running = keepEven(s.Running)
	s.Waiting = keepEven(s.Waiting)
	e.samp.frag = keepEven(e.samp.frag)
	e.cfg.SampleInterval *= 2
	e.res.SamplesThinned = true
}

// keepEven moves the elements at even indices of xs to its front and returns
// them.
func keepEven[T any](xs []T) []T {
	n := 0
	for i := 0; i < len(xs); i += 2 {
		xs[n] = xs[i]
		n++
	}
	clear(xs[n:])
	return xs[:n]
}
