// Fast paths: shortcuts that skip work whose outcome is known, through the
// optional interfaces alloc.TripRecorder and alloc.Stamper and
// strategy.DecodeStepper, so they hold for any allocator or strategy that
// implements them. They change no result: fastpath_test.go runs every
// engine with them and without them (NoFastPaths) and compares. See doc.go,
// "Fast paths".

package sim

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// decodeRuns is the state of the decode-run fast path (decodeRun).
type decodeRuns struct {
	ds    strategy.DecodeStepper // e.kv when it can run decode steps in bulk; nil: off
	ids   []strategy.SeqID       // scratch: the running requests' ids
	ends  []int64                // scratch: the end time of each step ahead
	steps int64                  // steps done by decode runs (tests check that it engaged)
}

// tripMemo is the round-trip fast path for activation buffers: the closed
// trips by buffer pattern, on an allocator that records them.
type tripMemo struct {
	rec alloc.TripRecorder // e.al when it records round trips; nil: off
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
	}
	if st, ok := e.al.(alloc.Stamper); ok {
		e.samp.memo.st = st
	}
	if fs, ok := e.al.(alloc.FreeSummarizer); ok {
		e.samp.memo.fs = fs
	}
	if ds, ok := e.kv.(strategy.DecodeStepper); ok {
		e.runs.ds = ds
	}
	e.samp.bulk = true
}

// noFastPaths turns every fast path off: the plain step-by-step engine.
func (e *Engine) noFastPaths() {
	e.runs.ds = nil
	e.trips.rec, e.trips.closed, e.trips.trips = nil, nil, nil
	e.samp.memo.st, e.samp.memo.fs = nil, nil
	e.samp.bulk = false
}

// decodeRun runs, in one go, the steps ahead in which nothing happens but
// one more token for every running request: nobody waits, every running
// request decodes one sample and does not finish, no request arrives (that
// the client's cap lets it send), no sample is due, the step's activation buffers are a round trip the
// allocator can repeat (or are off), and the strategy can do the grows in
// bulk (strategy.DecodeStepper: on a paged pool, blocks are taken in the
// order step-by-step grows take them). Each step's time is the roofline of
// the same work step() would sum: the same float64 sums of whole numbers. It
// stops after the step whose end reaches the next arrival or sample time,
// so that those see the state of that step, and reports whether it ran at
// least two steps; otherwise nothing has changed and step runs one.
func (e *Engine) decodeRun() bool {
	c := &e.cfg
	if e.runs.ds == nil || e.dg != nil || e.capped || e.waiting.len() > 0 || len(e.running) < 1 ||
		len(e.running) > c.MaxSeqs || len(e.running) > c.MaxBatchTokens {
		return false
	}
	limit := c.MaxContext
	var ctx int64
	for _, ri := range e.running {
		r := &e.reqs[ri]
		if r.n != 1 || r.prefilled < r.need || r.first < 0 {
			return false
		}
		limit = min(limit, r.output-r.gen-1) // steps before the one that completes it
		ctx += int64(r.prompt + r.gen - 1)
	}
	if limit < 2 || e.kv.Stats().CopiedBytes != e.lastCopied {
		return false
	}
	n := int64(len(e.running))
	var trip *alloc.Trip
	if c.Activations {
		i, ok := e.trips.closed[actKey{n, n}]
		if !ok || !e.trips.rec.RepeatTrip(&e.trips.trips[i], 0) {
			return false
		}
		trip = &e.trips.trips[i] // valid to the end: nothing is recorded in a decode run
	}
	w := stepWork{tokens: n, sampled: n}
	now := e.now
	ends := e.runs.ends[:0]
	// An arrival the client cannot send (its cap is reached, and nothing
	// ends in a decode run to free a slot) changes nothing: it does not end
	// the run.
	arrivals := e.next < len(e.reqs) && !e.cl.full()
	for j := range int64(limit) {
		// step() sums float64(ctx) over the batch; every partial sum is a
		// whole number far below 2^53, so the float64 of the total is equal.
		w.attnPairs = float64(ctx + j*n)
		w.kvRead = w.attnPairs
		dt := e.cost.stepTime(w)
		if c.Duration > 0 && now+dt > c.Duration {
			break
		}
		now += dt
		ends = append(ends, now)
		if now >= e.samp.next || (arrivals && e.reqs[e.next].arrival <= now) ||
			(c.Duration > 0 && now >= c.Duration) {
			break
		}
	}
	e.runs.ends = ends
	if len(ends) < 2 {
		return false
	}
	ids := e.runs.ids[:0]
	for _, ri := range e.running {
		ids = append(ids, strategy.SeqID(ri))
	}
	e.runs.ids = ids
	k := e.runs.ds.DecodeSteps(ids, len(ends))
	if k == 0 {
		return false
	}
	if c.Activations {
		if !e.trips.rec.RepeatTrip(trip, int64(k)) {
			panic(fmt.Sprintf("sim: activation trip of %d tokens no longer repeatable after a decode run of %d steps", n, k))
		}
		e.trips.repeats += int64(k)
	}
	if e.rec != nil {
		start := e.now
		for j := range int64(k) {
			x := float64(ctx + j*n)
			e.rec.step(stepWork{tokens: n, sampled: n, attnPairs: x, kvRead: x}, start, ends[j])
			start = ends[j]
		}
	}
	e.now = ends[k-1]
	e.res.Steps += int64(k)
	e.runs.steps += int64(k)
	e.tally.batchSum += int64(k) * n
	for _, ri := range e.running {
		e.reqs[ri].gen += k
	}
	e.res.OutputTokens += int64(k) * n
	e.sampleUntil(e.now)
	return true
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
