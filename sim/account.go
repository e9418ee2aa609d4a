// Accounting: tokens as a step advances its requests, completions,
// latencies and the result's summary fields. See doc.go, "Accounting".

package sim

import (
	"fmt"
	"math"
	"math/bits"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/gpufrag/gpufrag/kv/strategy"
)

// tally is what the run counts besides the series, for finish.
type tally struct {
	ttft, tpot, e2e []float64 // seconds, per request
	// Requests over Config.EarlyStop's limits, and how many of them make a
	// p99 fail (0: not checked).
	ttftOver, tpotOver int
	overLimit          int
	batchSum           int64   // Σ batch sizes over steps
	normSum            float64 // Σ e2e ÷ output tokens over completed requests with output
	normN              int
	itl                itlTally
}

// Inter-token latency (ITL): the gaps between each request's successive
// output tokens, as a benchmark client that gets one token a stream chunk
// measures them (vLLM's benchmark_serving and SGLang's bench_serving take
// the median over every gap of every request). There is one gap a token,
// so they go into a histogram of bounded size rather than a list: HDR
// Histogram, 3 significant digits at a unit of 1 ns, so a quantile is
// within 0.1% of the gap it stands for and never below it (a lowest value
// of 1 µs would make the unit 512 ns: 0.2% at 200 µs, a small model's
// decode step), up to 10⁶ s; a gap beyond that (a request preempted for
// 11 days) counts as 10⁶ s. The same gaps give the same histogram in any
// order, so Retime's equals Run's.
const (
	itlLowestNs  = 1
	itlHighestNs = 1_000_000_000_000_000
	itlDigits    = 3
)

// itlPool keeps the histograms of finished tallies for the next (Retime
// runs in the inner loop of a fit; a histogram is about 330 KB).
var itlPool = sync.Pool{New: func() any { return hdrhistogram.New(itlLowestNs, itlHighestNs, itlDigits) }}

// itlTally counts gaps: a run of n equal gaps of v ns waits in v, n (a
// decode run's steps and a step's requests often end equal gaps) until a
// different one comes.
type itlTally struct {
	h    *hdrhistogram.Histogram
	v, n int64
	// With Config.EarlyStop.ITLP99: gaps from overFrom ns up are over
	// the limit (itlOver), over counts those flushed, and overLimit of
	// them make the p99 fail (0: not checked).
	overFrom, over, overLimit int64
}

// limit sets up the count of gaps over l seconds, which fail the p99
// once n of them are (EarlyStop).
func (t *itlTally) limit(l float64, n int64) {
	t.overFrom, t.overLimit = itlOverFrom(l), n
}

// failed reports whether enough gaps are over the limit for the p99 to be
// over it, whatever gaps come later.
func (t *itlTally) failed() bool {
	if t.overLimit == 0 {
		return false
	}
	over := t.over
	if t.v >= t.overFrom {
		over += t.n // the run not yet flushed
	}
	return over >= t.overLimit
}

// itlOverFrom is the smallest gap in ns that a p99 reports as over l
// seconds: the p99 of a histogram is its bucket's highest value
// (itlRank), so a bucket is over when that is, and the buckets are in
// order. Gaps past the histogram's range count as its highest value.
func itlOverFrom(l float64) int64 {
	over := func(v int64) bool { return float64(itlHighest(v))/1e9 > l }
	if !over(itlHighestNs) {
		return math.MaxInt64
	}
	lo, hi := int64(0), int64(itlHighestNs) // over(lo) false (a gap of 0 reports 0), over(hi) true
	for hi-lo > 1 {
		if m := lo + (hi-lo)/2; over(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi
}

// itlHighest is the highest value of v's histogram bucket (v in range),
// by the shift of itlSameBucket.
func itlHighest(v int64) int64 {
	s := max(bits.Len64(uint64(v)|2047)-11, 0)
	return (v>>s+1)<<s - 1
}

// add counts n gaps of v ns.
func (t *itlTally) add(v, n int64) {
	if v == t.v {
		t.n += n // the common case, inlined: a step's requests that decoded in the step before
		return
	}
	t.addOther(v, n)
}

// addOther is add for a gap other than the pending run's.
func (t *itlTally) addOther(v, n int64) {
	if t.n > 0 && itlSameBucket(t.v, v) {
		t.n += n
		return
	}
	t.flush()
	t.v, t.n = v, n
}

// itlSameBucket reports whether the histogram counts gaps a and b (in
// its range) in one bucket, so that a run of them can be recorded at
// once: HDR Histogram's bucket of v at a 1 ns unit and 3 significant
// digits (2,048 sub-buckets) is v >> s, s = bit length of v|2047 − 11
// (its countsIndex). A decode run's steps grow by a few nanoseconds a
// step, most within one bucket. TestITLSameBucket holds it to the
// library's ValuesAreEquivalent.
func itlSameBucket(a, b int64) bool {
	if a < itlLowestNs || b < itlLowestNs || a > itlHighestNs || b > itlHighestNs {
		return a == b
	}
	s := max(bits.Len64(uint64(a)|2047)-11, 0)
	return a>>s == b>>s
}

func (t *itlTally) flush() {
	if t.n == 0 {
		return
	}
	if t.h == nil {
		t.h = itlPool.Get().(*hdrhistogram.Histogram)
		t.h.Reset()
	}
	// In range by the clamp, so RecordValues cannot fail.
	_ = t.h.RecordValues(min(max(t.v, itlLowestNs), itlHighestNs), t.n)
	if t.v >= t.overFrom {
		t.over += t.n
	}
	t.n = 0
}

// latency is the gaps' p50 and p99 in seconds (zero without a gap), and
// returns the histogram to the pool.
func (t *itlTally) latency() Latency {
	t.flush()
	if t.h == nil {
		return Latency{}
	}
	l := Latency{P50: itlRank(t.h, 0.5), P99: itlRank(t.h, 0.99)}
	itlPool.Put(t.h)
	t.h = nil
	return l
}

// itlRank is h's nearest-rank p-quantile (the value of rank ⌈p×N⌉, as
// nearestRank takes every other latency) in seconds: the highest value
// of its bucket. HDR's ValueAtQuantile takes rank ⌊p×N + ½⌋, one lower
// where p×N has a fraction under a half (p99 of 160 gaps: the 158th, not
// the 159th), so it is asked for the percentile whose rounded rank is
// the nearest rank: 100 × (rank − ¼) ÷ N.
func itlRank(h *hdrhistogram.Histogram, p float64) float64 {
	n := h.TotalCount()
	rank := min(max(int64(math.Ceil(p*float64(n))), 1), n)
	return float64(h.ValueAtQuantile(100*(float64(rank)-0.25)/float64(n))) / 1e9
}

// tokenAt accounts for a token of r's n samples at time at: the gap since
// its last token (none before its first), in the tally and a recording.
func (e *Engine) tokenAt(r *req, at int64) {
	if r.first >= 0 {
		e.tally.itl.add(at-r.last, int64(r.n))
		if e.rec != nil {
			e.rec.gap(at, r.last, int64(r.n))
		}
	}
	r.last = at
}

// advance applies one batch entry after the step ran.
func (e *Engine) advance(b entry) error {
	r := &e.reqs[b.r]
	if r.ph != phaseRunning {
		return nil // failed by an activation OOM in this step
	}
	if b.prefill {
		r.prefilled += b.tokens
		if r.prefilled < r.need {
			return nil
		}
		if r.gen >= r.output {
			return e.complete(b.r)
		}
	}
	// A finished prefill samples the next token, as a decode step does.
	r.gen++
	e.res.OutputTokens += int64(r.n)
	if t := &e.tally.itl; r.first >= 0 && e.rec == nil && e.now-r.last == t.v {
		// tokenAt's common case, written out: a call for every token a
		// step makes showed in BenchmarkAzureConv (docs/benchmarks.md).
		t.n += int64(r.n)
		r.last = e.now
	} else {
		e.tokenAt(r, e.now)
	}
	if r.first < 0 {
		r.first = e.now
		e.firstToken(float64(r.first-r.sent+e.reqNs) / 1e9)
	}
	if r.gen >= r.output {
		return e.complete(b.r)
	}
	return nil
}

// firstToken records a request's TTFT (seconds).
func (e *Engine) firstToken(s float64) {
	e.tally.ttft = append(e.tally.ttft, s)
	if l := e.cfg.EarlyStop.TTFTP99; l > 0 && s > l {
		e.tally.ttftOver++
	}
}

// stopEarly says why Config.EarlyStop ends the run now ("" to go on).
func (e *Engine) stopEarly() string {
	es := &e.cfg.EarlyStop
	t := &e.tally
	switch {
	case es.OnFailure && e.res.RequestsFailedOOM > 0:
		return "oom"
	case es.OnFailure && e.res.ActivationOOMs > 0:
		return "activation_oom"
	case t.overLimit > 0 && t.ttftOver >= t.overLimit:
		return "ttft_p99"
	case t.overLimit > 0 && t.tpotOver >= t.overLimit:
		return "tpot_p99"
	case t.itl.failed():
		return "itl_p99"
	}
	return ""
}

func (e *Engine) complete(ri int32) error {
	r := &e.reqs[ri]
	if err := e.kv.Release(strategy.SeqID(ri)); err != nil {
		return fmt.Errorf("sim: release %s: %w", r.id, err)
	}
	for pos, x := range e.running {
		if x == ri {
			e.removeRunning(pos)
			break
		}
	}
	r.admitted, r.ph, r.finish = false, phaseDone, e.now
	e.res.RequestsCompleted++
	if e.rec != nil {
		e.rec.done = append(e.rec.done, ri)
	}
	if e.cl.limit > 0 {
		e.cl.freed = append(e.cl.freed, e.now) // its client slot
	}
	// A request of no output tokens (prefill only: a trace's failed or
	// empty response, or a prompt that fills the context) has no first
	// token, so no TTFT: r.first stays -1. vLLM has no such request
	// (max_tokens ≥ 1), so no figure of its benchmark counts one.
	var rt RequestTime
	if r.output > 1 {
		tpot := float64(r.finish-r.first) / 1e9 / float64(r.output-1)
		e.tally.tpot = append(e.tally.tpot, tpot)
		if l := e.cfg.EarlyStop.TPOTP99; l > 0 && tpot > l {
			e.tally.tpotOver++
		}
		rt.TPOT, rt.HasTPOT = tpot, true
	}
	if e.cfg.RequestTimes {
		rt.Output = r.output
		if r.first >= 0 {
			rt.TTFT, rt.HasTTFT = float64(r.first-r.sent+e.reqNs)/1e9, true
		}
		e.res.RequestTimes = append(e.res.RequestTimes, rt)
	}
	e.tally.e2e = append(e.tally.e2e, float64(r.finish-r.sent+e.reqNs)/1e9)
	if r.output > 0 {
		e.tally.normSum += float64(r.finish-r.sent+e.reqNs) / 1e9 / float64(r.output)
		e.tally.normN++
	}
	return nil
}

// finish fills the result's summary fields.
func (e *Engine) finish() {
	e.freeActivations()
	res := &e.res
	res.RequestsUnfinished = len(e.running) + e.waiting.len()
	st := e.al.Stats()
	res.PeakReservedBytes = st.PeakReserved
	res.PeakAllocatedBytes = st.PeakAllocated
	sst := e.kv.Stats()
	res.KVCopiedBytes = sst.CopiedBytes
	res.PrefixQueryTokens, res.PrefixHitTokens = sst.PrefixQueryTokens, sst.PrefixHitTokens
	res.FragRate = quantiles(e.samp.frag)
	res.HealthMin = e.samp.healthMin
	res.SampleIntervalS = float64(e.cfg.SampleInterval) / 1e9
	res.KVBreakdown = e.samp.kv.shares()
	res.SimulatedSeconds = float64(e.now) / 1e9
	if e.now > 0 {
		res.OutputTokensPerS = float64(res.OutputTokens) / res.SimulatedSeconds
	}
	if res.Steps > 0 {
		res.BatchSizeMean = float64(e.tally.batchSum) / float64(res.Steps)
	}
	res.TTFT, res.TPOT, res.E2E = latency(e.tally.ttft), latency(e.tally.tpot), latency(e.tally.e2e)
	res.ITL = e.tally.itl.latency()
	if e.tally.normN > 0 {
		res.NormalizedLatencyMean = e.tally.normSum / float64(e.tally.normN)
	}
	e.finishDefrag()
}
