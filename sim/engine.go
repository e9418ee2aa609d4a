// The engine: arrivals, the step loop with continuous batching, admission,
// out-of-memory handling and accounting. See doc.go for the overview.

package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/workload"
)

// phase is where a request is in its life.
type phase uint8

const (
	phasePending  phase = iota // not arrived yet
	phaseWaiting               // arrived, not admitted (or preempted)
	phaseRunning               // admitted: prefilling or decoding
	phaseDone                  // completed
	phaseFailed                // failed with an OOM error
	phaseRejected              // can never fit
)

// req is one request's state. Index in Engine.reqs is its strategy.SeqID.
type req struct {
	id        string
	arrival   int64
	prompt    int
	output    int // tokens to generate (after truncation)
	maxOut    int // max_tokens as the engine sees it
	n         int
	ph        phase
	admitted  bool     // holds KV in the strategy
	need      int      // tokens to prefill in the current admission (prompt + generated)
	prefilled int      // tokens of need already computed
	gen       int      // output tokens generated so far (kept across preemption)
	first     int64    // time of the first output token; -1 before
	promised  int64    // reserve policy: tokens counted in Engine.committed while running
	prefix    []uint64 // workload.Request.PrefixHashes (shared, read-only)
	finish    int64
}

// entry is one request's share of a step.
type entry struct {
	r       int32 // request index
	prefill bool
	tokens  int // prefill chunk, or n decode tokens
	ctx     int // tokens already in the KV cache before this step's tokens
}

// Engine simulates one serving instance (one GPU of a tensor-parallel group)
// on a list of requests. It is deterministic and single-threaded; build one
// per run with New and call Run once.
type Engine struct {
	cfg  Config
	cost costModel
	al   alloc.Allocator
	st   strategy.Strategy

	reqs    []req
	next    int   // next request to arrive
	waiting deque // arrived, not admitted; front first
	running []int32
	now     int64

	paged       bool  // the strategy is paged:B
	contiguous  bool  // the strategy keeps KV in allocator blocks (contiguous-*)
	capped      bool  // KV tokens are capped at the budget (vmm: vAttention's pool)
	budgetBytes int64 // KV budget in bytes (reserve policy, reports)
	committed   int64 // reserve policy: tokens promised to running requests
	actLive     []alloc.Handle
	batch       []entry

	// Activation round trips on an allocator that records them (see
	// endTrip): rec is e.al when it is an alloc.TripRecorder, trips the
	// closed trips by buffer pattern.
	// The trips stay in a slice (tripList, indexed by trips) so that
	// RepeatTrip, called through an interface, gets a pointer already on
	// the heap: a pointer to a copy would move each step's Trip there.
	rec      alloc.TripRecorder
	trips    map[actKey]int32
	tripList []alloc.Trip
	trip     alloc.Trip // the trip of the current step, while tripOn
	tripOn   bool
	tripN    int64 // allocations the current step's trip made

	// The fragmentation metrics of the last sample and the allocator's
	// stamp then, when it is an alloc.Stamper.
	stamper   alloc.Stamper
	fragOK    bool
	fragStamp uint64
	fragLast  frag.Metrics

	runSteps    int64 // steps done by decodeRun (tests check that it engaged)
	tripRepeats int64 // steps whose activation calls a closed trip stood in for

	ds     strategy.DecodeStepper // e.st when it can run decode steps in bulk
	runIDs []strategy.SeqID       // scratch: decodeRun's ids
	runNow []int64                // scratch: decodeRun's step end times

	res        Result
	nextSample int64
	fragSamp   []float64
	ttft, tpot []float64
	e2e        []float64
	kvAcc      [6]float64 // Σ samples of TokenStates, Reservation, Internal, External, CachedIdle, Footprint
	kvSamples  int
	healthMin  float64 // the least health over every sample taken (thinning keeps it)
	batchSum   int64
	lastCopied int64

	dg         *defragger // nil when defrag is off or cannot act
	newSample  bool       // a sample was taken since the defrag policy last looked
	lastFrag   float64    // the last sample's fragmentation rate
	lastHealth float64    // and health
	actFail    int64      // size of the activation buffer that last failed
}

// New builds an engine for the requests (sorted by arrival, as
// workload.Read returns them). The allocator and KV strategy are built here;
// the model's weights and the CUDA context take device memory first.
func New(cfg Config, reqs []workload.Request) (*Engine, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if c.OnOOM == OnOOMDefault {
		c.OnOOM = defaultOnOOM(c.KV)
	}
	if !c.ChunkedPrefill {
		// Without chunked prefill a prompt must fit in one step's budget;
		// vLLM v0 raised max_num_batched_tokens to max_model_len for that.
		c.MaxBatchTokens = max(c.MaxBatchTokens, c.MaxContext)
	}
	e := &Engine{cfg: c, cost: newCostModel(c)}
	weights := c.Model.WeightBytes(c.TP)
	other := weights + c.ContextBytes
	if other >= c.GPU.Capacity {
		return nil, fmt.Errorf("%w: %s weights (%s per GPU at tp %d) and context do not fit in %s of %s; raise --tp",
			ErrBadConfig, c.Model.Name, mem.FormatBytes(weights), c.TP, c.GPU.Name, mem.FormatBytes(c.GPU.Capacity))
	}
	dev, err := mem.NewDevice(c.GPU.Capacity, other)
	if err != nil {
		return nil, fmt.Errorf("%w: device: %w", ErrBadConfig, err)
	}
	e.al, err = spec.New(c.Alloc, dev)
	if err != nil {
		return nil, fmt.Errorf("%w: alloc: %w", ErrBadConfig, err)
	}
	var act int64
	if c.Activations {
		act = e.cost.activationPeak(int64(c.MaxBatchTokens), int64(min(c.MaxSeqs, c.MaxBatchTokens)))
	}
	e.budgetBytes = int64(c.GPUMemoryUtilization*float64(c.GPU.Capacity)) - other - act
	if e.budgetBytes <= 0 {
		return nil, fmt.Errorf("%w: no memory left for the KV cache: %s × %.2f − weights %s − context %s − activation peak %s ≤ 0",
			ErrBadConfig, mem.FormatBytes(c.GPU.Capacity), c.GPUMemoryUtilization, mem.FormatBytes(weights),
			mem.FormatBytes(c.ContextBytes), mem.FormatBytes(act))
	}
	e.st, err = strategy.Parse(c.KV, strategy.Env{Model: c.Model, KVDType: c.KVDType, TP: c.TP,
		Alloc: e.al, PoolBytes: e.budgetBytes, MaxContext: c.MaxContext, NoPrefixCaching: !c.PrefixCaching})
	if err != nil {
		return nil, fmt.Errorf("%w: kv: %w", ErrBadConfig, err)
	}
	if rec, ok := e.al.(alloc.TripRecorder); ok {
		e.rec, e.trips = rec, make(map[actKey]int32)
	}
	if st, ok := e.al.(alloc.Stamper); ok {
		e.stamper = st
	}
	if ds, ok := e.st.(strategy.DecodeStepper); ok {
		e.ds = ds
	}
	e.res = Result{KV: e.st.Name(), Allocator: e.al.Spec(), OnOOM: c.OnOOM.String(), KVBudgetBytes: e.budgetBytes}
	e.paged = strings.HasPrefix(e.st.Name(), "paged")
	e.contiguous = strings.HasPrefix(e.st.Name(), "contiguous")
	// vAttention sizes its physical page pool like vLLM's block pool, so
	// vmm KV stops at the same budget; a paged pool is capped by its size.
	e.capped = strings.HasPrefix(e.st.Name(), "vmm")
	if e.paged {
		e.res.KVPoolBytes = e.st.Usage().Footprint()
	}
	if c.Defrag.Policy != DefragOff {
		e.initDefrag()
	}
	e.reqs = make([]req, len(reqs))
	for i, w := range reqs {
		if i > 0 && w.Arrival < reqs[i-1].Arrival {
			return nil, fmt.Errorf("%w: requests not sorted by arrival at %s", ErrBadConfig, w.ID)
		}
		maxOut := c.MaxContext - w.PromptTokens
		if c.MaxTokens > 0 {
			maxOut = min(maxOut, c.MaxTokens)
		}
		n := max(w.N, 1)
		e.reqs[i] = req{id: w.ID, arrival: w.Arrival, prompt: w.PromptTokens, output: w.OutputTokens,
			maxOut: max(maxOut, 0), n: n, first: -1, prefix: w.PrefixHashes}
	}
	return e, nil
}

// defaultOnOOM is the behaviour of the system a KV strategy stands for.
func defaultOnOOM(kv string) OnOOM {
	switch {
	case strings.HasPrefix(kv, "paged"), strings.HasPrefix(kv, "vmm"):
		return OnOOMPreempt // vLLM (vAttention runs inside it)
	case strings.HasPrefix(kv, "contiguous-max"):
		return OnOOMReserve // Orca and FasterTransformer admit what their reservation fits
	}
	return OnOOMFail // a plain framework growing its cache until the allocator raises
}

// Run simulates until every request has finished or Config.Duration, and
// returns the result. The engine must not be used afterwards.
func (e *Engine) Run() (Result, error) {
	c := &e.cfg
	e.nextSample = 0
	e.healthMin = 1
	if c.Duration == 0 && len(e.reqs) > 0 {
		// Keep the series to at most ~20,000 samples on long traces.
		span := e.reqs[len(e.reqs)-1].arrival
		c.SampleInterval = max(c.SampleInterval, span/20_000)
	}
	for {
		e.arrive()
		if c.Duration > 0 && e.now >= c.Duration {
			break
		}
		if len(e.running) == 0 && e.waiting.len() == 0 {
			if e.next == len(e.reqs) {
				break
			}
			// Idle until the next arrival.
			t := e.reqs[e.next].arrival
			if c.Duration > 0 {
				t = min(t, c.Duration)
			}
			e.sampleUntil(t)
			e.now = max(e.now, t)
			e.checkDefrag()
			continue
		}
		if err := e.step(); err != nil {
			return e.res, err
		}
	}
	e.finish()
	return e.res, nil
}

// arrive moves requests whose arrival time has come to the waiting queue,
// rejecting those that can never be served.
func (e *Engine) arrive() {
	for e.next < len(e.reqs) && e.reqs[e.next].arrival <= e.now {
		if e.cfg.Duration > 0 && e.reqs[e.next].arrival >= e.cfg.Duration {
			return
		}
		i := e.next
		e.next++
		r := &e.reqs[i]
		e.res.RequestsTotal++
		if r.prompt > e.cfg.MaxContext || r.n > e.cfg.MaxBatchTokens {
			// Longer than the context, or more samples than one step can
			// decode: it can never run.
			e.reject(i)
			continue
		}
		if r.output > r.maxOut {
			r.output = r.maxOut
			e.res.OutputsTruncated++
		}
		if e.cfg.OnOOM == OnOOMReserve && e.reserveTokens(r) > e.budgetTokens() {
			e.reject(i)
			continue
		}
		r.ph = phaseWaiting
		r.need = r.prompt
		e.waiting.pushBack(int32(i))
	}
}

// step schedules one batch, runs it and accounts for it.
func (e *Engine) step() error {
	if e.decodeRun() {
		return nil
	}
	e.defragStep()
	preempted, err := e.schedule()
	if err != nil {
		return err
	}
	if len(e.batch) == 0 {
		if !preempted {
			e.unblock()
		}
		return nil
	}
	work := e.work()
	if e.cfg.Activations {
		work = e.activations(work)
		if len(e.batch) == 0 {
			return nil
		}
	}
	st := e.st.Stats()
	work.copied = st.CopiedBytes - e.lastCopied
	e.lastCopied = st.CopiedBytes
	dt := e.cost.stepTime(work)
	if e.cfg.Duration > 0 && e.now+dt > e.cfg.Duration {
		// The step would end past the window: stop at the window's end and
		// do not count the step's tokens (partial work is not output).
		e.freeActivations()
		e.endTrip(work)
		e.sampleUntil(e.cfg.Duration)
		e.now = e.cfg.Duration
		return nil
	}
	e.now += dt
	e.res.Steps++
	e.batchSum += int64(len(e.batch))
	for _, b := range e.batch {
		if err := e.advance(b); err != nil {
			return err
		}
	}
	e.freeActivations()
	e.endTrip(work)
	e.sampleUntil(e.now)
	e.checkDefrag()
	return nil
}

// decodeRun runs, in one go, the steps ahead in which nothing happens but
// one more token for every running request: nobody waits, every running
// request decodes one sample and does not finish, no request arrives, no
// sample is due, the step's activation buffers are a round trip the
// allocator can repeat (or are off), and the strategy can do the grows in
// bulk (strategy.DecodeStepper: on a paged pool, blocks are taken in the
// order step-by-step grows take them). Each step's time is the roofline of
// the same work step() would sum: the same float64 sums of whole numbers. It
// stops after the step whose end reaches the next arrival or sample time,
// so that those see the state of that step, and reports whether it ran at
// least two steps; otherwise nothing has changed and step runs one.
func (e *Engine) decodeRun() bool {
	c := &e.cfg
	if e.ds == nil || e.dg != nil || e.capped || e.waiting.len() > 0 || len(e.running) < 1 ||
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
	if limit < 2 || e.st.Stats().CopiedBytes != e.lastCopied {
		return false
	}
	n := int64(len(e.running))
	var trip *alloc.Trip
	if c.Activations {
		i, ok := e.trips[actKey{n, n}]
		if !ok || !e.rec.RepeatTrip(&e.tripList[i], 0) {
			return false
		}
		trip = &e.tripList[i]
	}
	w := stepWork{tokens: n, sampled: n}
	now := e.now
	e.runNow = e.runNow[:0]
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
		e.runNow = append(e.runNow, now)
		if now >= e.nextSample || (e.next < len(e.reqs) && e.reqs[e.next].arrival <= now) ||
			(c.Duration > 0 && now >= c.Duration) {
			break
		}
	}
	if len(e.runNow) < 2 {
		return false
	}
	e.runIDs = e.runIDs[:0]
	for _, ri := range e.running {
		e.runIDs = append(e.runIDs, strategy.SeqID(ri))
	}
	k := e.ds.DecodeSteps(e.runIDs, len(e.runNow))
	if k == 0 {
		return false
	}
	if c.Activations {
		if !e.rec.RepeatTrip(trip, int64(k)) {
			panic(fmt.Sprintf("sim: activation trip of %d tokens no longer repeatable after a decode run of %d steps", n, k))
		}
		e.tripRepeats += int64(k)
	}
	e.now = e.runNow[k-1]
	e.res.Steps += int64(k)
	e.runSteps += int64(k)
	e.batchSum += int64(k) * n
	for _, ri := range e.running {
		e.reqs[ri].gen += k
	}
	e.res.OutputTokens += int64(k) * n
	e.sampleUntil(e.now)
	return true
}

// checkDefrag lets the defrag policy look at the latest sample, once.
func (e *Engine) checkDefrag() {
	if e.dg != nil && e.newSample {
		e.newSample = false
		e.defragSample(e.lastFrag, e.lastHealth)
	}
}

// schedule builds e.batch: running requests first (their next prefill chunk
// or decode token, growing the KV cache), then waiting requests in FCFS order
// while the token budget, the sequence limit and memory allow. It reports
// whether it preempted anyone.
func (e *Engine) schedule() (preempted bool, err error) {
	c := &e.cfg
	e.batch = e.batch[:0]
	budget := c.MaxBatchTokens
	for i := 0; i < len(e.running) && len(e.batch) < c.MaxSeqs; i++ {
		ri := e.running[i]
		r := &e.reqs[ri]
		if r.prefilled < r.need {
			chunk := min(r.need-r.prefilled, budget)
			if chunk == 0 {
				break
			}
			e.batch = append(e.batch, entry{r: ri, prefill: true, tokens: chunk, ctx: r.prefilled})
			budget -= chunk
			continue
		}
		if budget < r.n {
			break
		}
		ok, p, err := e.grow(ri, i)
		if err != nil {
			return preempted, err
		}
		preempted = preempted || p
		if !ok {
			// r left the running list (preempted, failed or rejected); the
			// request now at position i has not been scheduled yet.
			i--
			continue
		}
		e.batch = append(e.batch, entry{r: ri, tokens: r.n, ctx: r.prompt + r.gen - 1})
		budget -= r.n
	}
	if preempted {
		// vLLM admits nobody in a step that had to preempt.
		return preempted, nil
	}
	for e.waiting.len() > 0 && len(e.running) < c.MaxSeqs && budget > 0 {
		ri := e.waiting.front()
		r := &e.reqs[ri]
		if !c.ChunkedPrefill && r.need > budget {
			break
		}
		if c.OnOOM == OnOOMReserve && e.committed+e.reserveTokens(r) > e.budgetTokens() {
			break
		}
		err := e.admitKV(ri)
		if errors.Is(err, strategy.ErrNoMemory) && e.defragFit(failedSize(err)) {
			err = e.admitKV(ri)
		}
		switch {
		case err == nil:
		case errors.Is(err, strategy.ErrNoMemory):
			if c.OnOOM == OnOOMFail {
				e.waiting.popFront()
				e.fail(int(ri), "oom")
				continue
			}
			return preempted, nil // wait until memory frees up
		case errors.Is(err, strategy.ErrTooLong):
			e.waiting.popFront()
			e.reject(int(ri))
			continue
		default:
			return preempted, fmt.Errorf("sim: admit %s: %w", r.id, err)
		}
		e.waiting.popFront()
		r.ph, r.admitted = phaseRunning, true
		if c.OnOOM == OnOOMReserve {
			r.promised = e.reserveTokens(r)
			e.committed += r.promised
		}
		e.running = append(e.running, ri)
		chunk := min(r.need-r.prefilled, budget)
		e.batch = append(e.batch, entry{r: ri, prefill: true, tokens: chunk, ctx: r.prefilled})
		budget -= chunk
	}
	return preempted, nil
}

// grow adds one token to each sample of running request ri at position pos
// of e.running. On ErrNoMemory it applies the OOM policy; it returns whether
// ri is still running and scheduled, and whether it preempted.
func (e *Engine) grow(ri int32, pos int) (ok, preempted bool, err error) {
	compacted := false
	for {
		err := e.growKV(ri)
		if err == nil {
			return true, preempted, nil
		}
		if !errors.Is(err, strategy.ErrNoMemory) {
			return false, preempted, fmt.Errorf("sim: grow %s: %w", e.reqs[ri].id, err)
		}
		if !compacted {
			compacted = true
			if e.defragFit(failedSize(err)) {
				continue
			}
		}
		if e.cfg.OnOOM != OnOOMPreempt {
			e.removeRunning(pos)
			e.fail(int(ri), "oom")
			return false, preempted, nil
		}
		last := len(e.running) - 1
		if e.running[last] == ri {
			if last == 0 {
				// Alone and still out of memory: it can never fit.
				e.al.EmptyCache()
				if e.growKV(ri) == nil {
					return true, preempted, nil
				}
				e.removeRunning(pos)
				e.reject(int(ri))
				return false, preempted, nil
			}
			e.preempt(last)
			return false, true, nil
		}
		e.preempt(last)
		preempted = true
	}
}

// failedSize is the allocation an out-of-memory error was for (0 when the
// error carries none, e.g. a paged pool out of blocks).
func failedSize(err error) int64 {
	var oom *alloc.OOMError
	if errors.As(err, &oom) {
		return oom.Requested
	}
	return 0
}

// errBudget is the ErrNoMemory a capped strategy gets past the KV budget.
var errBudget = fmt.Errorf("%w: KV budget exhausted", strategy.ErrNoMemory)

// admitKV admits waiting request ri into the strategy.
func (e *Engine) admitKV(ri int32) error {
	r := &e.reqs[ri]
	if e.capped && (e.st.Stats().Tokens+int64(r.n*r.need))*int64(e.cost.kvBytesPerTok) > e.budgetBytes {
		return errBudget
	}
	sr := strategy.Request{Prompt: r.need, MaxOutput: r.maxOut - r.gen, TrueOutput: r.output - r.gen, N: r.n}
	if r.prefix != nil {
		sr.PrefixIDs, sr.PrefixSpan = r.prefix, workload.PrefixBlockTokens
	}
	if err := e.st.Admit(strategy.SeqID(ri), sr); err != nil {
		return err
	}
	r.prefilled = 0
	if pc, ok := e.st.(strategy.PrefixCaching); ok {
		// Cached prompt blocks need no prefill compute.
		r.prefilled = pc.PrefixHit(strategy.SeqID(ri))
	}
	return nil
}

// growKV adds one token per sample to running request ri.
func (e *Engine) growKV(ri int32) error {
	if e.capped && (e.st.Stats().Tokens+int64(e.reqs[ri].n))*int64(e.cost.kvBytesPerTok) > e.budgetBytes {
		return errBudget
	}
	return e.st.Grow(strategy.SeqID(ri), 1)
}

// unblock runs when nothing could be scheduled although requests wait: with
// nothing running, the head of the queue does not fit even in empty memory,
// so it can never run.
func (e *Engine) unblock() {
	if len(e.running) > 0 || e.waiting.len() == 0 {
		return
	}
	e.al.EmptyCache()
	ri := e.waiting.popFront()
	r := &e.reqs[ri]
	if err := e.admitKV(ri); err != nil {
		e.reject(int(ri))
		return
	}
	// It fits in emptied memory: run it now, alone (it passed the reserve
	// policy's budget when it arrived), so the loop always makes progress.
	r.ph, r.admitted = phaseRunning, true
	if e.cfg.OnOOM == OnOOMReserve {
		r.promised = e.reserveTokens(r)
		e.committed += r.promised
	}
	e.running = append(e.running, ri)
}

// preempt frees the running request at position pos for recomputation and
// puts it at the front of the waiting queue (vLLM's prepend_request).
func (e *Engine) preempt(pos int) {
	ri := e.running[pos]
	r := &e.reqs[ri]
	_ = e.st.Preempt(strategy.SeqID(ri))
	e.removeRunning(pos)
	r.ph, r.admitted = phaseWaiting, false
	r.need, r.prefilled = r.prompt+r.gen, 0
	e.waiting.pushFront(ri)
	e.res.Preemptions++
	e.event("preempt", r.id)
}

func (e *Engine) removeRunning(pos int) {
	ri := e.running[pos]
	if e.cfg.OnOOM == OnOOMReserve {
		e.committed -= e.reqs[ri].promised
		e.reqs[ri].promised = 0
	}
	copy(e.running[pos:], e.running[pos+1:])
	e.running = e.running[:len(e.running)-1]
}

// fail ends request i with an OOM error; it must not be in e.running.
func (e *Engine) fail(i int, kind string) {
	r := &e.reqs[i]
	if r.admitted {
		_ = e.st.Release(strategy.SeqID(i))
		r.admitted = false
	}
	r.ph = phaseFailed
	e.res.RequestsFailedOOM++
	e.event(kind, r.id)
}

// reject ends request i as one that can never be served.
func (e *Engine) reject(i int) {
	r := &e.reqs[i]
	if r.admitted {
		_ = e.st.Release(strategy.SeqID(i))
		r.admitted = false
	}
	r.ph = phaseRejected
	e.res.RequestsRejected++
	e.event("reject", r.id)
}

func (e *Engine) event(kind, id string) {
	if len(e.res.Events) < e.cfg.MaxEvents {
		e.res.Events = append(e.res.Events, Event{Time: float64(e.now) / 1e9, Kind: kind, Request: id})
	}
}

// reserveTokens is what the reserve policy promises a request: the
// reservation of a strategy that reserves whole sequences (the contiguous-max
// family: Orca's admission), otherwise its prompt and max tokens per sample
// (the prompt once for paged, which shares it: TensorRT-LLM's
// GUARANTEED_NO_EVICT).
func (e *Engine) reserveTokens(r *req) int64 {
	sr := strategy.Request{Prompt: r.prompt + r.gen, MaxOutput: r.maxOut - r.gen, TrueOutput: r.output - r.gen, N: r.n}
	if rs, ok := e.st.(strategy.Reserving); ok {
		if t, whole := rs.ReservedTokens(sr); whole {
			return int64(r.n) * int64(t)
		}
	}
	if e.paged {
		return int64(r.prompt) + int64(r.n)*int64(r.maxOut)
	}
	return int64(r.n) * int64(r.prompt+r.maxOut)
}

func (e *Engine) budgetTokens() int64 {
	return e.budgetBytes / max(1, int64(e.cost.kvBytesPerTok))
}

// work sums the batch's work for the roofline.
func (e *Engine) work() stepWork {
	var w stepWork
	for _, b := range e.batch {
		r := &e.reqs[b.r]
		if b.prefill {
			w.prefill(int64(b.ctx), int64(b.tokens))
			if b.ctx+b.tokens == r.need && r.gen < r.output {
				w.sampled += int64(r.n)
			}
			continue
		}
		w.decode(int64(b.ctx), int64(r.n))
	}
	return w
}

// activations allocates the step's transient buffers through the allocator
// in the order one transformer layer uses them (the caching allocator reuses
// them from layer to layer). When they do not fit, the request with the most
// tokens in the step fails with an OOM error, as the engine process would
// have raised torch.OutOfMemoryError for its batch, and the step is retried
// without it.
func (e *Engine) activations(w stepWork) stepWork {
	e.tripOn = false
	if e.rec != nil {
		if i, ok := e.trips[actKey{w.tokens, w.sampled}]; ok && e.rec.RepeatTrip(&e.tripList[i], 1) {
			e.tripRepeats++
			return w
		}
		e.trip, e.tripN, e.tripOn = e.rec.BeginTrip(), 0, true
	}
	for len(e.batch) > 0 {
		if e.allocActivations(w) {
			return w
		}
		if e.defragFit(e.actFail) && e.allocActivations(w) {
			return w
		}
		e.res.ActivationOOMs++
		big := 0
		for i, b := range e.batch {
			if b.tokens > e.batch[big].tokens {
				big = i
			}
		}
		ri := e.batch[big].r
		e.batch = append(e.batch[:big], e.batch[big+1:]...)
		for pos, x := range e.running {
			if x == ri {
				e.removeRunning(pos)
				break
			}
		}
		e.fail(int(ri), "activation_oom")
		w = e.work()
	}
	return w
}

// allocActivations runs the buffer pattern of one layer; the residual stream
// h and the logits stay live to the end of the step. It returns false (with
// nothing held) when an allocation fails.
func (e *Engine) allocActivations(w stepWork) bool {
	cm := &e.cost
	t := w.tokens
	a := func(size int64) (alloc.Handle, bool) {
		if size <= 0 {
			return 0, true
		}
		b, err := e.al.Alloc(size, 0)
		if err != nil {
			e.actFail = size
			return 0, false
		}
		e.actLive = append(e.actLive, b.Handle)
		e.tripN++
		return b.Handle, true
	}
	f := func(h alloc.Handle) {
		if h == 0 {
			return
		}
		_ = e.al.Free(h)
		for i := len(e.actLive) - 1; i >= 0; i-- {
			if e.actLive[i] == h {
				e.actLive = append(e.actLive[:i], e.actLive[i+1:]...)
				break
			}
		}
	}
	var ok bool
	var qkv, att, gu, act alloc.Handle
	if _, ok = a(cm.hiddenPerTok * t); !ok {
		goto fail
	}
	if qkv, ok = a(cm.qkvPerTok * t); !ok {
		goto fail
	}
	if att, ok = a(cm.attnPerTok * t); !ok {
		goto fail
	}
	f(qkv)
	if gu, ok = a(cm.gateUpPerTok * t); !ok {
		goto fail
	}
	if act, ok = a(cm.actPerTok * t); !ok {
		goto fail
	}
	f(gu)
	f(att)
	f(act)
	if _, ok = a(cm.logitsPerSeq * w.sampled); !ok {
		goto fail
	}
	return true
fail:
	e.freeActivations()
	return false
}

// actKey is what a step's activation buffers depend on: its tokens and
// sampled positions (their sizes are those times per-run constants).
type actKey struct{ tokens, sampled int64 }

// endTrip ends the step's activation round trip (begun in activations and
// ended after freeActivations). When the allocator confirms that the
// step's buffers left it as they found it, the trip is kept under the step's
// buffer pattern; a later step with the same pattern that finds the
// allocator in that state (nothing but closed trips since) skips the calls:
// they would do the same again, and RepeatTrip counts them. Results do not
// change: sizes, addresses, peaks and counters are those of the calls.
func (e *Engine) endTrip(w stepWork) {
	if !e.tripOn {
		return
	}
	e.tripOn = false
	if e.rec.EndTrip(&e.trip, e.tripN) {
		if len(e.trips) >= 4096 {
			clear(e.trips) // bound the memo; entries are cheap to record again
			e.tripList = e.tripList[:0]
		}
		k := actKey{w.tokens, w.sampled}
		if i, ok := e.trips[k]; ok {
			e.tripList[i] = e.trip
			return
		}
		e.trips[k] = int32(len(e.tripList))
		e.tripList = append(e.tripList, e.trip)
	}
}

func (e *Engine) freeActivations() {
	for i := len(e.actLive) - 1; i >= 0; i-- {
		_ = e.al.Free(e.actLive[i])
	}
	e.actLive = e.actLive[:0]
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
	if r.first < 0 {
		r.first = e.now
		e.ttft = append(e.ttft, float64(r.first-r.arrival)/1e9)
	}
	if r.gen >= r.output {
		return e.complete(b.r)
	}
	return nil
}

func (e *Engine) complete(ri int32) error {
	r := &e.reqs[ri]
	if err := e.st.Release(strategy.SeqID(ri)); err != nil {
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
	if r.first < 0 {
		// A prefill-only request: its answer is the end of the prefill.
		r.first = e.now
		e.ttft = append(e.ttft, float64(r.first-r.arrival)/1e9)
	}
	if r.output > 1 {
		e.tpot = append(e.tpot, float64(r.finish-r.first)/1e9/float64(r.output-1))
	}
	e.e2e = append(e.e2e, float64(r.finish-r.arrival)/1e9)
	return nil
}

// sampleUntil records the state for every sample time up to t.
func (e *Engine) sampleUntil(t int64) {
	if e.nextSample > t {
		return
	}
	st := e.al.Stats()
	var m frag.Metrics
	if e.stamper != nil && e.fragOK && e.stamper.Stamp() == e.fragStamp {
		m = e.fragLast // the allocator's Layout is as it was at the last sample
	} else {
		m = frag.Compute(e.al.Layout())
		if e.stamper != nil {
			e.fragOK, e.fragStamp, e.fragLast = true, e.stamper.Stamp(), m
		}
	}
	u := e.st.Usage()
	for e.nextSample <= t {
		s := &e.res.Series
		s.Time = append(s.Time, float64(e.nextSample)/1e9)
		s.Reserved = append(s.Reserved, st.Reserved)
		s.Allocated = append(s.Allocated, st.Allocated)
		s.Requested = append(s.Requested, st.Requested)
		s.KVHeld = append(s.KVHeld, u.Held())
		s.Health = append(s.Health, m.Health)
		s.Running = append(s.Running, len(e.running))
		s.Waiting = append(s.Waiting, e.waiting.len())
		e.fragSamp = append(e.fragSamp, m.FragRate)
		e.newSample, e.lastFrag, e.lastHealth = true, m.FragRate, m.Health
		e.kvAcc[0] += float64(u.TokenStates)
		e.kvAcc[1] += float64(u.Reservation)
		e.kvAcc[2] += float64(u.Internal)
		if e.contiguous {
			// Only contiguous KV lives among the allocator's other blocks, so
			// only for it are the segments' free holes KV's external
			// fragmentation; a paged pool or vmm ranges have none (their
			// allocator's holes still show in frag_rate and health).
			e.kvAcc[3] += float64(u.External)
		}
		e.kvAcc[4] += float64(u.CachedIdle)
		e.kvAcc[5] += float64(u.Footprint())
		e.kvSamples++
		e.healthMin = min(e.healthMin, m.Health)
		e.nextSample += e.cfg.SampleInterval
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
	e.fragSamp = keepEven(e.fragSamp)
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

// finish fills the result's summary fields.
func (e *Engine) finish() {
	e.freeActivations()
	res := &e.res
	res.RequestsUnfinished = len(e.running) + e.waiting.len()
	st := e.al.Stats()
	res.PeakReservedBytes = st.PeakReserved
	res.PeakAllocatedBytes = st.PeakAllocated
	sst := e.st.Stats()
	res.KVCopiedBytes = sst.CopiedBytes
	res.PrefixQueryTokens, res.PrefixHitTokens = sst.PrefixQueryTokens, sst.PrefixHitTokens
	res.FragRate = quantiles(e.fragSamp)
	res.HealthMin = e.healthMin
	res.SampleIntervalS = float64(e.cfg.SampleInterval) / 1e9
	a := e.kvAcc
	denom := a[0] + a[1] + a[2] + a[3]
	res.KVBreakdown = Shares{TokenStates: share(a[0], denom), Reservation: share(a[1], denom),
		Internal: share(a[2], denom), External: share(a[3], denom), CachedIdle: share(a[4], a[5])}
	res.SimulatedSeconds = float64(e.now) / 1e9
	if e.now > 0 {
		res.OutputTokensPerS = float64(res.OutputTokens) / res.SimulatedSeconds
	}
	if res.Steps > 0 {
		res.BatchSizeMean = float64(e.batchSum) / float64(res.Steps)
	}
	res.TTFT, res.TPOT, res.E2E = latency(e.ttft), latency(e.tpot), latency(e.e2e)
	e.finishDefrag()
}

// Close releases the strategy's and allocator's memory; use it to check that
// a run left nothing behind.
func (e *Engine) Close() error {
	e.freeActivations()
	if err := e.st.Close(); err != nil {
		return err
	}
	e.al.EmptyCache()
	return nil
}

// Allocator returns the engine's allocator (for inspection after Run).
func (e *Engine) Allocator() alloc.Allocator { return e.al }

// Strategy returns the engine's KV strategy (for inspection after Run).
func (e *Engine) Strategy() strategy.Strategy { return e.st }
