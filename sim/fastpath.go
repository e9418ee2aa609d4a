// Fast paths: shortcuts that skip work whose outcome is known, through the
// optional interfaces alloc.TripRecorder and alloc.Stamper and
// strategy.DecodeStepper, so they hold for any allocator or strategy that
// implements them. They change no result: fastpath_test.go runs every
// engine with them and without them (NoFastPaths) and compares. See doc.go,
// "Fast paths".

package sim

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// decodeRuns is the state of the decode-run fast path (decodeRun).
type decodeRuns struct {
	ds    strategy.DecodeStepper // e.kv when it can run decode steps in bulk; nil: off
	ids   []strategy.SeqID       // scratch: the running requests' ids
	roof  exactRoofline          // the roofline's step times in integers (runTimes)
	dts   []int64                // scratch: the step times of runTimes' last run, in order
	steps int64                  // steps done by decode runs (tests check that it engaged)
	exact int64                  // step times runTimes took from roof (tests check that it engaged)
}

// tripMemo is the round-trip fast path for activation buffers: the closed
// trips by buffer pattern, on an allocator that records them.
type tripMemo struct {
	rec  alloc.TripRecorder // e.al when it records round trips; nil: off
	room alloc.TripRoom     // e.al when its trips repeat across grows (vmm); nil: none
	// closed indexes the closed trips in trips by buffer pattern. Trips stay
	// in a slice so that RepeatTrip, called through an interface, gets a
	// pointer that is already on the heap: a pointer to a copy would move
	// every repeated step's Trip to the heap.
	closed  map[actKey]int32
	trips   []alloc.Trip
	cur     alloc.Trip // the trip of the current step, while on
	on      bool
	n       int64 // allocations the current step's trip made
	repeats int64 // steps whose activation calls a closed trip stood in for
}

// maxClosedTrips bounds the trip memo. A pattern is a step's (tokens,
// sampled positions) pair; a run at the default 8,192 batched tokens and
// 256 sequences sees a few hundred to a few thousand of them, and an entry
// is under 200 bytes, so 4,096 entries stay below 1 MiB. Past the bound the
// memo is cleared: entries are cheap to record again.
const maxClosedTrips = 4096

// metricsMemo keeps the fragmentation metrics of the last sample while the
// allocator's stamp says its Layout has not changed, and computes them
// from the allocator's free blocks alone when it can (FreeSummarizer).
type metricsMemo struct {
	st    alloc.Stamper        // e.al when it has a mutation stamp; nil: off
	ok    bool                 // m and stamp are set
	stamp uint64               // the allocator's stamp when m was computed
	h     float64              // the health at stamp
	fs    alloc.FreeSummarizer // e.al when it can summarise its free blocks; nil: off
	hits  int64                // samples that reused h (tests check that it engaged)
}

// initFastPaths turns on the fast paths the allocator and strategy allow.
func (e *Engine) initFastPaths() {
	if rec, ok := e.al.(alloc.TripRecorder); ok {
		e.trips.rec, e.trips.closed = rec, make(map[actKey]int32)
		e.trips.room, _ = e.al.(alloc.TripRoom)
	}
	if st, ok := e.al.(alloc.Stamper); ok {
		e.samp.memo.st = st
	}
	if fs, ok := e.al.(alloc.FreeSummarizer); ok {
		e.samp.memo.fs = fs
	}
	// A decode run repeats its steps' activation round trip: without a
	// recorder, it never runs, and the steps do not pay for asking.
	if ds, ok := e.kv.(strategy.DecodeStepper); ok && (!e.cfg.Activations || e.trips.rec != nil) {
		e.runs.ds = ds
		e.runs.roof = newExactRoofline(&e.cost)
	}
	e.samp.bulk = true
}

// noFastPaths turns every fast path off: the plain step-by-step engine.
func (e *Engine) noFastPaths() {
	e.runs.ds, e.runs.roof = nil, exactRoofline{}
	e.trips.rec, e.trips.room, e.trips.closed, e.trips.trips = nil, nil, nil, nil
	e.samp.memo.st, e.samp.memo.fs = nil, nil
	e.samp.bulk = false
}

// decodeRun runs, in one go, the steps ahead in which nothing happens but
// one more token for every running request: nobody is admitted
// (admissionBlocked), every running request decodes one sample and does
// not finish, no request arrives (that the client's cap lets it send), no
// sample is due, the step's activation buffers are a round trip the
// allocator can repeat (or are off), every grow passes the KV budget of a
// capped strategy, and the strategy can do the grows in bulk
// (strategy.DecodeStepper: on a paged pool, blocks are taken in the order
// step-by-step grows take them). On an allocator whose trips repeat across
// grows (alloc.TripRoom: vmm, where a step's KV grows map pages before its
// activation buffers do), the grows leave the memory a trip needs free and
// the run is no longer than the address space holds trips for, so that
// every step's trip would have gone as the first did. Each step's time is the step time of the
// same work step() would sum: the same float64 sums of whole numbers
// (runTimes). It stops after the step whose end reaches the next arrival
// or sample time, so that those see the state of that step, and reports
// whether it ran any; otherwise nothing has changed and step runs one.
func (e *Engine) decodeRun() bool {
	c := &e.cfg
	if e.runs.ds == nil || e.dg != nil || len(e.running) < 1 ||
		len(e.running) > c.MaxSeqs || len(e.running) > c.MaxBatchTokens || !e.admissionBlocked() {
		return false
	}
	limit := int64(c.MaxContext)
	var ctx int64
	for _, ri := range e.running {
		r := &e.reqs[ri]
		if r.n != 1 || r.prefilled < r.need || r.first < 0 {
			return false
		}
		limit = min(limit, int64(r.output-r.gen-1)) // steps before the one that completes it
		ctx += int64(r.prompt + r.gen - 1)
	}
	st := e.kv.Stats()
	if st.CopiedBytes != e.lastCopied {
		return false
	}
	n := int64(len(e.running))
	if e.capped {
		// growKV refuses a grow that takes the KV past the budget: the
		// last grow of step j would hold st.Tokens + j×n tokens.
		limit = min(limit, (e.budgetBytes/int64(e.cost.kvBytesPerTok)-st.Tokens)/n)
	}
	if limit < 2 {
		return false
	}
	var trip *alloc.Trip
	var keep int64 // MaxAllocatable each step's trip needs after its grows
	if c.Activations {
		i, ok := e.trips.closed[actKey{n, n}]
		if !ok || !e.trips.rec.RepeatTrip(&e.trips.trips[i], 0) {
			return false
		}
		trip = &e.trips.trips[i] // valid to the end: nothing is recorded in a decode run
		if e.trips.room != nil {
			var times int64
			keep, times = e.trips.room.TripRoom(trip)
			if limit = min(limit, times); limit < 2 {
				return false
			}
		}
	}
	// The run ends with the step whose end reaches stop, or before the one
	// that would end past the window. An arrival the client cannot send (its
	// cap is reached, and nothing ends in a decode run to free a slot)
	// changes nothing: it does not end the run.
	stop := e.samp.next
	if e.next < len(e.reqs) && !e.cl.full() {
		stop = min(stop, e.reqs[e.next].arrival)
	}
	window := int64(math.MaxInt64)
	if c.Duration > 0 {
		stop, window = min(stop, c.Duration), c.Duration
	}
	w := stepWork{tokens: n, sampled: n}
	m, end := e.runTimes(w, ctx, limit, stop, window)
	if m < 2 {
		return false
	}
	ids := e.runs.ids[:0]
	for _, ri := range e.running {
		ids = append(ids, strategy.SeqID(ri))
	}
	e.runs.ids = ids
	k := int64(e.runs.ds.DecodeSteps(ids, int(m), keep))
	if k == 0 {
		return false
	}
	if c.Activations {
		if !e.trips.rec.RepeatTrip(trip, k) {
			panic(fmt.Sprintf("sim: activation trip of %d tokens no longer repeatable after a decode run of %d steps", n, k))
		}
		e.trips.repeats += k
	}
	if k < m {
		// The strategy stopped first: the end of its last step.
		_, end = e.runTimes(w, ctx, k, math.MaxInt64, math.MaxInt64)
	}
	// Inter-token gaps: the run's first step ends each running request's
	// gap since its own last token; each later step ends one gap of every
	// running request, the step's time (runTimes kept the k times).
	dts := e.runs.dts[:k]
	first := e.now + dts[0]
	for _, ri := range e.running {
		e.tokenAt(&e.reqs[ri], first)
	}
	for _, dt := range dts[1:] {
		e.tally.itl.add(dt, n)
	}
	if e.rec != nil {
		// A recording keeps every step: the run's k steps, with the times
		// runTimes took for them (step()'s, one by one).
		start := e.now
		for j, dt := range dts {
			x := float64(ctx + int64(j)*n)
			sw := stepWork{tokens: n, sampled: n, attnPairs: x, kvRead: x}
			e.rec.step(sw, start, start+dt)
			if j > 0 {
				e.rec.gap(start+dt, start, n)
			}
			start += dt
		}
	}
	if e.overlap {
		// The last step's start, for arrive: its time as runTimes took it.
		x := float64(ctx + (k-1)*n)
		e.stepStart = end - e.cost.stepTime(stepWork{tokens: n, sampled: n, attnPairs: x, kvRead: x})
	}
	e.now = end
	e.res.Steps += k
	e.sgl.decoded(k)
	e.runs.steps += k
	e.tally.batchSum += k * n
	for _, ri := range e.running {
		r := &e.reqs[ri]
		r.gen += int(k)
		r.last = end
	}
	e.res.OutputTokens += k * n
	e.sampleUntil(e.now)
	return true
}

// admissionBlocked reports whether a step that decodes every running
// request admits nobody without trying: nobody waits, or admitWaiting
// stops at the head of the queue before it calls the strategy (no
// sequence slot or token budget left, a prompt the budget cannot take
// whole without chunked prefill, or the reserve policy's budget), a
// stop that holds for every step of a decode run, as nothing it reads
// changes in one.
func (e *Engine) admissionBlocked() bool {
	c := &e.cfg
	if e.waiting.len() == 0 {
		return true
	}
	budget := c.MaxBatchTokens // a prefill-first step admits before the decodes
	if !c.separateSteps() {
		budget -= len(e.running) // every running request decodes one token first
	}
	if len(e.running) >= c.MaxSeqs || budget <= 0 {
		return true
	}
	if e.sgl.on {
		return false // SGLang's room changes with every decode step
	}
	r := &e.reqs[e.waiting.front()]
	return (!c.ChunkedPrefill && r.need > budget) ||
		(c.OnOOM == OnOOMReserve && e.committed+e.reserveTokens(r) > e.budgetTokens())
}

// runTimes works out the steps of the decode run ahead: step j (from 0,
// fewer than limit) decodes w's n tokens over ctx + j×n context tokens and
// takes cost.stepTime of that work. The run ends with the first step whose
// end reaches stop, or before it when its end passes window (stop ≤
// window). runTimes returns its steps and the end of the last.
//
// On the roofline the times come from exactRoofline, a few integer
// operations a step, wherever they are provably stepTime's, otherwise from
// stepTime; under a Profile from its decodeTimer, where only the KV term
// moves. -tags invariants compares every one.
func (e *Engine) runTimes(w stepWork, ctx, limit, stop, window int64) (m, end int64) {
	n := w.tokens
	f := func(j int64) int64 {
		w.attnPairs = float64(ctx + j*n) // step() sums float64(ctx) over the batch: the same whole number
		w.kvRead = w.attnPairs
		return e.cost.stepTime(w)
	}
	if p := e.cost.prof; p != nil {
		// Under a Profile only the KV term moves: decodeTimer, exactly
		// stepTime's.
		w.attnPairs, w.kvRead = float64(ctx), float64(ctx)
		dt := p.decodeTimer(w.step())
		g := f
		f = func(j int64) int64 {
			t := dt.at(float64(ctx + j*n))
			if invariants.Enabled && t != g(j) {
				panic(fmt.Sprintf("sim: decode run step %d of %d tokens over %d: %d ns, stepTime %d ns", j, n, ctx, t, g(j)))
			}
			return t
		}
	}
	now, dt := e.now, int64(0)
	dts := e.runs.dts[:0]
	defer func() { e.runs.dts = dts[:m] }()
	rr := e.runs.roof.start(n, ctx, limit)
	switch rr.sides {
	case oneSide:
		// One side is the larger throughout: only its integers move.
		s := rr.s[rr.big]
		q, r, dq, dr, d, win := s.q, s.r, s.dq, s.dr, s.d, s.win
		top := d - win
		var fromInts int64
		for m < limit {
			if r > win && r < top {
				dt = int64(q) + 1 + rr.overhead
				fromInts++
			} else {
				dt = f(m)
			}
			if invariants.Enabled && dt != f(m) {
				panic(fmt.Sprintf("sim: decode run step %d of %d tokens over %d: %d ns, stepTime %d ns", m, n, ctx, dt, f(m)))
			}
			if q, r = q+dq, r+dr; r >= d {
				q, r = q+1, r-d
			}
			dts = append(dts, dt)
			m, now = m+1, now+dt
			if now >= stop {
				break
			}
		}
		e.runs.exact += fromInts
	case bothSides:
		a, b := rr.s[0], rr.s[1]
		for m < limit {
			var ok bool
			if dt, ok = rr.next(&a, &b); ok {
				e.runs.exact++
			} else {
				dt = f(m)
			}
			if invariants.Enabled && dt != f(m) {
				panic(fmt.Sprintf("sim: decode run step %d of %d tokens over %d: %d ns, stepTime %d ns", m, n, ctx, dt, f(m)))
			}
			dts = append(dts, dt)
			m, now = m+1, now+dt
			if now >= stop {
				break
			}
		}
	default:
		for m < limit {
			dt = f(m)
			dts = append(dts, dt)
			m, now = m+1, now+dt
			if now >= stop {
				break
			}
		}
	}
	if now > window {
		m, now = m-1, now-dt // the last step would end past the window
	}
	return m, now
}

// exactRoofline computes the roofline's decode step times (costModel.stepTime)
// with integers. A decode step of n tokens over p context tokens does
// X₁ = n×F + p×A FLOPs and moves X₂ = W + (p + n)×K bytes (F FLOPs per
// token, A per context pair, W weight bytes, K KV bytes per token); when
// these are whole numbers below 2^53, stepTime computes them exactly, and
// its time is ⌈max(fl(fl(X₁ ÷ peakFLOPS) × 10⁹), fl(fl(X₂ ÷ peakBW) × 10⁹))⌉
// + overhead ns. Each side is within τ×2^−51 of its exact value
// τ = X × 10⁹ ÷ peak (two roundings of at most 2^−53 each), a rational
// q + r÷d that a step raises by a fixed dq + dr÷d (p grows by n). So when
// one side's q exceeds the other's and its fraction r÷d is farther than
// that bound from a whole number, the step time is q + 1 + overhead,
// whatever the rounding did; otherwise stepTime computes it.
type exactRoofline struct {
	ok         bool   // the model's figures are whole numbers and the peaks fit (set at init)
	f, a, w, k uint64 // F, A, W, K
	flops      peakFrac
	bw         peakFrac
	overhead   int64
}

// peakFrac writes 10⁹ ÷ peak as num ÷ den in whole numbers (den < 2^62):
// a float64 peak is mant × 2^e exactly.
type peakFrac struct{ num, den uint64 }

// newPeakFrac returns 10⁹ ÷ p as a peakFrac, and false when it does not fit.
func newPeakFrac(p float64) (peakFrac, bool) {
	if !(p > 0) || math.IsInf(p, 0) {
		return peakFrac{}, false
	}
	fr, exp := math.Frexp(p)
	mant, e := uint64(fr*(1<<53)), exp-53
	tz := bits.TrailingZeros64(mant)
	mant, e = mant>>tz, e+tz
	const g = 1_000_000_000
	switch {
	case e >= 0 && bits.Len64(mant)+e <= 61:
		return peakFrac{num: g, den: mant << e}, true
	case e < 0 && bits.Len64(g)-e <= 63:
		return peakFrac{num: g << -e, den: mant}, true
	}
	return peakFrac{}, false
}

// wholeBelow53 returns x as a uint64 when it is a whole number in [0, 2^53).
func wholeBelow53(x float64) (uint64, bool) {
	if !(x >= 0 && x < 1<<53) || x != math.Trunc(x) {
		return 0, false
	}
	return uint64(x), true
}

// newExactRoofline prepares the integer step times of cm's roofline; its
// ok is false under a Profile or when a figure is not a whole number.
func newExactRoofline(cm *costModel) exactRoofline {
	var r exactRoofline
	if cm.prof != nil || cm.overhead < 0 {
		return r
	}
	var ok [6]bool
	r.f, ok[0] = wholeBelow53(cm.flopsPerToken)
	r.a, ok[1] = wholeBelow53(cm.attnPerCtx)
	r.w, ok[2] = wholeBelow53(cm.weightBytes)
	r.k, ok[3] = wholeBelow53(cm.kvBytesPerTok)
	r.flops, ok[4] = newPeakFrac(cm.peakFLOPS)
	r.bw, ok[5] = newPeakFrac(cm.peakBW)
	r.ok = ok == [6]bool{true, true, true, true, true, true}
	r.overhead = cm.overhead
	return r
}

// roofRun is the state of one decode run's integer step times (runTimes
// steps it).
type roofRun struct {
	s        [2]ratSide // the FLOPs and the bytes side
	sides    int        // noSides, oneSide (s[big] is the larger at every step) or bothSides
	big      int
	overhead int64
}

// roofRun.sides.
const (
	noSides   = iota // the integers cannot tell: stepTime times every step
	oneSide          // s[big] is the larger side at every step of the run
	bothSides        // the larger side is decided step by step (next)
)

// next returns the time of the step whose sides are a and b, and whether
// the integers tell it, and moves both to the next step.
func (rr *roofRun) next(a, b *ratSide) (dt int64, ok bool) {
	switch {
	case a.q > b.q && a.r > a.win && a.r < a.d-a.win:
		dt, ok = int64(a.q)+1+rr.overhead, true
	case b.q > a.q && b.r > b.win && b.r < b.d-b.win:
		dt, ok = int64(b.q)+1+rr.overhead, true
	}
	a.step()
	b.step()
	return dt, ok
}

// ratSide is one side of the roofline of the step ahead: τ = q + r÷d ns,
// raised by dq + dr÷d each step; fractions within win÷d of a whole
// number are left to stepTime. qEnd is q at the run's last step.
type ratSide struct{ q, r, dq, dr, d, win, qEnd uint64 }

func (s *ratSide) step() {
	if s.q, s.r = s.q+s.dq, s.r+s.dr; s.r >= s.d {
		s.q, s.r = s.q+1, s.r-s.d
	}
}

// start returns the integer step times of a decode run of n tokens over
// ctx + j×n context tokens in step j < limit (sides noSides when they are
// not provably exact: stepTime times every step). One side is the larger
// at every step when its q exceeds the other's by 2 at the first and the
// last step: then its exact time exceeds the other's by more than 1 at
// both, and so, the difference being linear in j, at every step between.
func (r *exactRoofline) start(n, ctx, limit int64) roofRun {
	if !r.ok || n <= 0 || ctx < 0 || limit <= 0 {
		return roofRun{}
	}
	last := uint64(ctx + (limit-1)*n) // the largest context
	if last >= 1<<40 || uint64(n) >= 1<<20 {
		return roofRun{}
	}
	x1, dx1, ok1 := lin(uint64(n), r.f, uint64(ctx), last, r.a, uint64(n))
	x2, dx2, ok2 := lin(1, r.w, uint64(ctx+n), last+uint64(n), r.k, uint64(n))
	if !ok1 || !ok2 {
		return roofRun{}
	}
	rr := roofRun{overhead: r.overhead}
	var ok [2]bool
	rr.s[0], ok[0] = newSide(x1, dx1, r.flops, limit)
	rr.s[1], ok[1] = newSide(x2, dx2, r.bw, limit)
	if !ok[0] || !ok[1] {
		return roofRun{}
	}
	a, b := &rr.s[0], &rr.s[1]
	switch {
	case b.q >= a.q+2 && b.qEnd >= a.qEnd+2:
		rr.sides, rr.big = oneSide, 1
	case a.q >= b.q+2 && a.qEnd >= b.qEnd+2:
		rr.sides, rr.big = oneSide, 0
	default:
		rr.sides = bothSides
	}
	return rr
}

// lin returns c×u + p×v, the step's rise d×v, and whether c×u + last×v
// (the largest value over the run) is below 2^53, so that every value is
// exact in float64.
func lin(c, u, p, last, v, d uint64) (x, dx uint64, ok bool) {
	hi1, cu := bits.Mul64(c, u)
	hi2, lv := bits.Mul64(last, v)
	top, carry := bits.Add64(cu, lv, 0)
	if hi1 != 0 || hi2 != 0 || carry != 0 || top >= 1<<53 {
		return 0, 0, false
	}
	return cu + p*v, d * v, true
}

// newSide writes x × pf as q + r÷d, and its rise per step, dx × pf, as
// dq + dr÷d; qEnd is ⌊(x + (limit−1)×dx) × pf⌋, and win bounds the
// rounding of the run's values (below 2^−51 of the largest), in units of
// 1÷d.
func newSide(x, dx uint64, pf peakFrac, limit int64) (ratSide, bool) {
	d := pf.den
	hi, lo := bits.Mul64(x, pf.num)
	if hi >= d {
		return ratSide{}, false
	}
	q, r := bits.Div64(hi, lo, d)
	hi, lo = bits.Mul64(dx, pf.num)
	if hi >= d {
		return ratSide{}, false
	}
	dq, dr := bits.Div64(hi, lo, d)
	hi, lo = bits.Mul64(x+uint64(limit-1)*dx, pf.num) // below 2^53 (lin)
	if hi >= d {
		return ratSide{}, false
	}
	qEnd, _ := bits.Div64(hi, lo, d)
	if qEnd >= 1<<40 {
		return ratSide{}, false
	}
	hi, lo = bits.Mul64(qEnd+1, d)
	win := (hi<<13 | lo>>51) + 1 // ⌊(qEnd + 1) × d ÷ 2^51⌋ + 1 ≥ τ × 2^−51 × d
	if win >= d/4 {
		return ratSide{}, false
	}
	return ratSide{q: q, r: r, dq: dq, dr: dr, d: d, win: win, qEnd: qEnd}, true
}

// start is called before a step's activation buffers (w is the step's
// work). When the allocator can repeat the closed trip of the step's buffer
// pattern, it does (counting the calls) and start reports true: the buffers
// need not be made. Otherwise it begins recording the step's trip, which
// end closes.
func (m *tripMemo) start(w stepWork) (repeated bool) {
	m.on = false
	if m.rec == nil {
		return false
	}
	if i, ok := m.closed[actKey{w.tokens, w.sampled}]; ok && m.rec.RepeatTrip(&m.trips[i], 1) {
		m.repeats++
		return true
	}
	m.cur, m.n, m.on = m.rec.BeginTrip(), 0, true
	return false
}

// end ends the step's activation round trip (begun in start, ended after
// freeActivations). When the allocator confirms that the step's buffers
// left it as they found it, the trip is kept under the step's buffer
// pattern; a later step with the same pattern that finds the allocator in
// that state (nothing but closed trips since) skips the calls: they would
// do the same again, and RepeatTrip counts them. Results do not change:
// sizes, addresses, peaks and counters are those of the calls.
func (m *tripMemo) end(w stepWork) {
	if !m.on {
		return
	}
	m.on = false
	if !m.rec.EndTrip(&m.cur, m.n) {
		return
	}
	if len(m.closed) >= maxClosedTrips {
		clear(m.closed)
		m.trips = m.trips[:0]
	}
	k := actKey{w.tokens, w.sampled}
	if i, ok := m.closed[k]; ok {
		m.trips[i] = m.cur
		return
	}
	m.closed[k] = int32(len(m.trips))
	m.trips = append(m.trips, m.cur)
}

// health returns the health of the allocator's Layout now (largest free
// block ÷ cached free; the fragmentation rate is 1 − health): that of the
// last sample when its stamp says the Layout is unchanged, else from the
// allocator's FreeSummary when it has one, else from the whole Layout.
func (m *metricsMemo) health(al alloc.Allocator) float64 {
	if m.st != nil {
		s := m.st.Stamp()
		if m.ok && s == m.stamp {
			m.hits++
			return m.h
		}
		m.ok, m.stamp = true, s
	}
	if m.fs != nil {
		m.h = frag.Health(m.fs.FreeSummary())
	} else {
		m.h = frag.Compute(al.Layout()).Health
	}
	if invariants.Enabled && m.fs != nil {
		if want := frag.Compute(al.Layout()).Health; want != m.h {
			panic(fmt.Sprintf("sim: FreeSummary health %v, Layout health %v", m.h, want))
		}
	}
	return m.h
}
