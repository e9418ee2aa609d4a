// The engine: its state, construction and the loop of arrivals and steps.
// See doc.go for the overview; the rest of the engine is one file per
// concern:
//
//	schedule.go     batches, admission, growth, the out-of-memory policies
//	activations.go  the step's transient buffers through the allocator
//	fastpath.go     decode runs, repeated round trips, kept metrics
//	sample.go       the memory time series and the KV breakdown
//	account.go      tokens, completions, latencies and the result summary
//	defrag.go       compaction policies and their state

package sim

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/invariants"
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
	arrival   int64 // when its time comes (the trace's arrival)
	sent      int64 // when the client sent it: arrival, or later under Config.MaxConcurrency
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
	last      int64    // time of the latest output token (with first ≥ 0)
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
	cfg   Config
	cost  costModel
	reqNs int64 // the profile's per-request latency outside the steps (Profile.Overhead.RequestNs)
	al    alloc.Allocator
	kv    strategy.Strategy

	// Scheduling state (schedule.go).
	reqs        []req
	next        int   // next request to arrive
	waiting     deque // arrived, not admitted; front first
	running     []int32
	batch       []entry // the step being built and run
	now         int64
	budgetBytes int64 // KV budget in bytes (reserve policy, reports)
	committed   int64 // reserve policy: tokens promised to running requests
	lastCopied  int64 // the strategy's CopiedBytes after the last step
	// stepStart is when the last step began. Under a profile with
	// Overhead.ScheduleOverlap a request sent after it, while requests
	// run, missed the step the engine prepared during it: it is admitted
	// at the end of the next one.
	stepStart int64
	overlap   bool    // Config.Profile's Overhead.ScheduleOverlap
	requeue   bool    // PrefillFirstRequeue: reorder e.running after each schedule
	requeued  []int32 // scratch for requeue
	// V0 with chunked prefill admits waiting requests in a step that
	// preempted, and puts that step's victims back at the front of the
	// waiting queue only after (vLLM's _schedule_chunked_prefill:
	// _schedule_prefills, then waiting.extendleft(preempted)); held keeps
	// them meanwhile.
	admitAfterPreempt bool
	held              []int32

	// What the KV strategy is, from its parsed spec (set in New).
	paged      bool // the strategy is paged:B
	contiguous bool // the strategy keeps KV in allocator blocks (contiguous-*)
	capped     bool // KV tokens are capped at the budget (vmm: vAttention's pool)

	act   activationBufs // activations.go
	runs  decodeRuns     // fastpath.go
	sgl   sglAdmit       // profile_engine.go: SGLang's admission rule
	trips tripMemo       // fastpath.go
	samp  sampler        // sample.go
	tally tally          // account.go
	cl    client         // arrive: Config.MaxConcurrency's client
	res   Result
	dg    *defragger // defrag.go; nil when defrag is off or cannot act
	rec   *recorder  // retime.go; nil unless Record runs the engine
}

// New builds an engine for the requests (sorted by arrival, as
// workload.Read returns them). The allocator and KV strategy are built here;
// the model's weights and the CUDA context take device memory first.
func New(cfg Config, reqs []workload.Request) (*Engine, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	// The specs arrive parsed (Config.KV, Config.Alloc): the engine reads
	// no spec text. The pair is checked once, by the builder (sim/scenario)
	// and, against the built allocator, by strategy.New below.
	as, ks := c.Alloc, c.KV
	if c.OnOOM == OnOOMDefault {
		c.OnOOM = defaultOnOOM(ks)
	}
	if !c.ChunkedPrefill {
		// Without chunked prefill a prompt must fit in one step's budget;
		// vLLM v0 raised max_num_batched_tokens to max_model_len for that.
		c.MaxBatchTokens = max(c.MaxBatchTokens, c.MaxContext)
	}
	e := &Engine{cfg: c, cost: newCostModel(c)}
	if v, err := ParseEngineVersion(c.Engine, c.EngineVersion); err == nil { // validate checked it
		e.requeue = PrefillFirstRequeue(c.Engine, v, c.ChunkedPrefill)
	}
	e.admitAfterPreempt = c.Engine == EngineVLLMV0 && c.ChunkedPrefill
	e.samp.max = MaxSamples
	if c.Profile != nil {
		e.reqNs = c.Profile.Overhead.RequestNs
		e.overlap = c.Profile.Overhead.ScheduleOverlap
	}
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
	e.al, err = as.New(dev)
	if err != nil {
		return nil, fmt.Errorf("%w: alloc: %w", ErrBadConfig, err)
	}
	var act int64
	if c.Activations {
		act = e.cost.activationPeak(int64(c.MaxBatchTokens), int64(min(c.MaxSeqs, c.MaxBatchTokens)))
	}
	e.budgetBytes = int64(c.GPUMemoryUtilization*float64(c.GPU.Capacity)) - other - act
	if e.budgetBytes <= 0 {
		return nil, fmt.Errorf("%w: no memory left for the KV cache: %s × %.2f − weights %s − context %s − activation peak %s ≤ 0; "+
			"raise --gpu-memory-utilization, lower --max-num-batched-tokens (the activation peak) or raise --tp",
			ErrBadConfig, mem.FormatBytes(c.GPU.Capacity), c.GPUMemoryUtilization, mem.FormatBytes(weights),
			mem.FormatBytes(c.ContextBytes), mem.FormatBytes(act))
	}
	// Without a request that could hit the prefix cache, no block is ever
	// cached, and the engine reads no block ids: paged may count its
	// blocks instead of naming them (strategy.Env.CountBlocks), with the
	// same results.
	caching := c.PrefixCaching && mayHitPrefix(c, reqs)
	e.kv, err = strategy.New(ks, strategy.Env{Model: c.Model, KVDType: c.KVDType, TP: c.TP,
		Alloc: e.al, PoolBytes: e.budgetBytes, MaxContext: c.MaxContext,
		NoPrefixCaching: !caching, CountBlocks: true})
	if err != nil {
		return nil, fmt.Errorf("%w: kv: %w", ErrBadConfig, err)
	}
	e.initFastPaths()
	e.cl = client{limit: c.MaxConcurrency, idle: c.MaxConcurrency}
	e.res = Result{KV: e.kv.Name(), Allocator: e.al.Spec(), OnOOM: c.OnOOM.String(), KVBudgetBytes: e.budgetBytes}
	e.paged = ks.Family() == strategy.Paged
	e.contiguous = ks.Family() == strategy.Contiguous
	e.sgl = sglAdmit{on: c.Engine == EngineSGLang && c.OnOOM == OnOOMPreempt && e.paged, ratio: sglInitRatio}
	if ps, ok := e.kv.(strategy.PrefixSharing); ok && e.sgl.on && caching {
		e.sgl.share = ps
	}
	// vAttention sizes its physical page pool like vLLM's block pool, so
	// vmm KV stops at the same budget; a paged pool is capped by its size.
	e.capped = ks.Family() == strategy.VMM
	if e.paged {
		e.res.KVPoolBytes = e.kv.Usage().Footprint()
	}
	if c.Defrag.Policy != DefragOff {
		e.initDefrag(as)
	}
	e.reqs = make([]req, len(reqs))
	for i, w := range reqs {
		if i > 0 && w.Arrival < reqs[i-1].Arrival {
			return nil, fmt.Errorf("%w: requests not sorted by arrival at %s", ErrBadConfig, w.ID)
		}
		maxOut := c.MaxContext - w.PromptTokens
		if c.Engine == EngineSGLang {
			maxOut = sglMaxNewTokens(c.MaxContext, e.budgetTokens(), w.PromptTokens)
		}
		if c.MaxTokens > 0 {
			maxOut = min(maxOut, c.MaxTokens)
		}
		if c.MaxTokensIsOutput {
			maxOut = min(maxOut, max(w.OutputTokens, 1))
		}
		n := max(w.N, 1)
		e.reqs[i] = req{id: w.ID, arrival: w.Arrival, prompt: w.PromptTokens, output: w.OutputTokens,
			maxOut: max(maxOut, 0), n: n, first: -1, prefix: w.PrefixHashes}
	}
	if c.WarmPrompts {
		if err := e.warmPrompts(); err != nil {
			return nil, err
		}
	}
	if c.EarlyStop.TTFTP99 > 0 || c.EarlyStop.TPOTP99 > 0 {
		// The nearest-rank p99 of n ≤ N values exceeds a limit once
		// floor(n/100) + 1 of them do; floor(N/100) + 1 covers every n.
		e.tally.overLimit = len(reqs)/100 + 1
	}
	if l := c.EarlyStop.ITLP99; l > 0 {
		var gaps int64 // the most a run can record: a token's gap per sample after the first
		for i := range e.reqs {
			gaps += int64(max(e.reqs[i].output-1, 0)) * int64(e.reqs[i].n)
		}
		e.tally.itl.limit(l, gaps/100+1)
	}
	return e, nil
}

// mayHitPrefix says whether a request of reqs can use the prefix cache
// with c: one carries prefix ids, or WarmPrompts gives each its own.
func mayHitPrefix(c Config, reqs []workload.Request) bool {
	if c.WarmPrompts {
		return true
	}
	for i := range reqs {
		if len(reqs[i].PrefixHashes) > 0 {
			return true
		}
	}
	return false
}

// defaultOnOOM is the behaviour of the system a KV strategy stands for.
func defaultOnOOM(kv strategy.Spec) OnOOM {
	switch {
	case kv.Family() == strategy.Paged, kv.Family() == strategy.VMM:
		return OnOOMPreempt // vLLM (vAttention runs inside it)
	case kv.Reserves():
		return OnOOMReserve // Orca and FasterTransformer admit what their reservation fits
	}
	return OnOOMFail // a plain framework growing its cache until the allocator raises
}

// Run simulates until every request has finished or Config.Duration, and
// returns the result. The engine must not be used afterwards.
func (e *Engine) Run() (Result, error) {
	c := &e.cfg
	e.samp.next = 0
	e.samp.healthMin = 1
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
			if e.sgl.on {
				e.sglSetRatio(sglInitRatio) // self_check_during_idle
			}
			continue
		}
		if err := e.step(); err != nil {
			return e.res, err
		}
		if why := e.stopEarly(); why != "" {
			e.res.StoppedEarly = why
			break
		}
	}
	e.finish()
	return e.res, nil
}

// client is the benchmark client's cap on requests in flight
// (Config.MaxConcurrency, vLLM's and SGLang's --max-concurrency): a request
// whose time has come while the cap is reached waits at the client, not in
// the engine's queue, and is sent when a request in flight ends. In flight
// means sent and not ended (completed, failed or rejected): the waiting and
// running requests. The client's semaphore hands freed slots to its waiters
// in order, so a held request is sent at the time the oldest free slot was
// freed, and a request that finds a slot free is sent at its arrival.
type client struct {
	limit int // Config.MaxConcurrency; 0: open loop
	// idle counts the free slots freed before the last arrive: a request
	// that takes one is sent at its own arrival, which is later.
	idle int
	// freed holds the times of the slots freed since, oldest first from
	// head: completions at the end of a step (account.go), failures and
	// rejections at the moment fail or reject ends them (clientEnded). It holds at
	// most limit entries, and is empty after every arrive.
	freed []int64
	head  int
	ended int // RequestsFailedOOM + RequestsRejected already in freed or idle
}

// clientEnded notes the slots of the requests that failed or were rejected
// since the last call as freed now. fail and reject call it as they end a
// request (so a slot freed inside a defrag pause is freed at its own time),
// and the engine again after scheduling and at every arrive, where it finds
// nothing new; completions note their own slot.
func (e *Engine) clientEnded() {
	cl := &e.cl
	if cl.limit == 0 {
		return
	}
	for n := e.res.RequestsFailedOOM + e.res.RequestsRejected; cl.ended < n; cl.ended++ {
		cl.freed = append(cl.freed, e.now)
	}
}

// sendTime is when a request whose time came at arrival is sent: at
// arrival, or when the slot it would take was freed; ok is false when no
// slot is free. take then takes that slot.
func (cl *client) sendTime(arrival int64) (t int64, ok bool) {
	switch {
	case cl.limit == 0, cl.idle > 0:
		return arrival, true
	case cl.head < len(cl.freed):
		return max(arrival, cl.freed[cl.head]), true
	}
	return 0, false
}

func (cl *client) take() {
	switch {
	case cl.limit == 0:
	case cl.idle > 0:
		cl.idle--
	default:
		cl.head++
	}
}

// full reports whether every slot is taken (never for an open loop).
func (cl *client) full() bool { return cl.limit > 0 && cl.idle == 0 && cl.head == len(cl.freed) }

// settle makes every free slot idle: at the end of arrive, every request
// not sent yet arrives later than any slot was freed, or finds none free.
func (cl *client) settle() {
	cl.idle += len(cl.freed) - cl.head
	cl.freed, cl.head = cl.freed[:0], 0
}

// arrive sends the requests whose arrival time has come, as far as the
// client's cap allows, to the waiting queue, rejecting those that can never
// be served.
func (e *Engine) arrive() {
	e.clientEnded()
	held := false // a request sent is held for the step after the next
	for e.next < len(e.reqs) && e.reqs[e.next].arrival <= e.now {
		r := &e.reqs[e.next]
		sent, ok := e.cl.sendTime(r.arrival)
		if !ok || (e.cfg.Duration > 0 && sent >= e.cfg.Duration) {
			break // it waits for a slot at the client, or for good
		}
		if e.overlap && len(e.running) > 0 && sent > e.stepStart {
			held = true
			break // the step after the last was prepared without it
		}
		e.cl.take()
		i := e.next
		e.next++
		r.sent = sent
		e.res.RequestsTotal++
		if r.prompt > e.cfg.MaxContext || r.n > e.cfg.MaxBatchTokens {
			// Longer than the context, or more samples than one step can
			// decode: it can never run.
			e.reject(i)
			e.clientEnded()
			continue
		}
		if r.output > r.maxOut {
			r.output = r.maxOut
			e.res.OutputsTruncated++
		}
		if e.cfg.OnOOM == OnOOMReserve && e.reserveTokens(r) > e.budgetTokens() {
			e.reject(i)
			e.clientEnded()
			continue
		}
		r.ph = phaseWaiting
		r.need = r.prompt
		e.waiting.pushBack(int32(i))
	}
	if e.cl.limit > 0 && !held {
		// (A held request keeps the time its slot was freed: no settling.)
		e.cl.settle()
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
		e.clientEnded()
		return nil
	}
	work := e.work()
	if e.cfg.Activations {
		work = e.activations(work)
	}
	e.clientEnded()
	if len(e.batch) == 0 {
		return nil // every request of the step failed on its activations
	}
	st := e.kv.Stats()
	work.copied = st.CopiedBytes - e.lastCopied
	e.lastCopied = st.CopiedBytes
	dt := e.cost.stepTime(work)
	if e.cfg.Duration > 0 && e.now+dt > e.cfg.Duration {
		// The step would end past the window: stop at the window's end and
		// do not count the step's tokens (partial work is not output).
		e.freeActivations()
		e.trips.end(work)
		e.sampleUntil(e.cfg.Duration)
		e.now = e.cfg.Duration
		return nil
	}
	e.stepStart = e.now
	e.now += dt
	if e.rec != nil {
		e.rec.step(work, e.now-dt, e.now)
	}
	e.res.Steps++
	if !e.batch[0].prefill {
		e.sgl.decoded(1)
	}
	e.tally.batchSum += int64(len(e.batch))
	for _, b := range e.batch {
		if err := e.advance(b); err != nil {
			return err
		}
	}
	e.freeActivations()
	e.trips.end(work)
	e.sampleUntil(e.now)
	e.checkDefrag()
	return nil
}

// Close releases the strategy's and allocator's memory; use it to check that
// a run left nothing behind.
func (e *Engine) Close() error {
	e.freeActivations()
	if err := e.kv.Close(); err != nil {
		return err
	}
	e.al.EmptyCache()
	return nil
}

// Allocator returns the engine's allocator (for inspection after Run).
func (e *Engine) Allocator() alloc.Allocator { return e.al }

// Strategy returns the engine's KV strategy (for inspection after Run).
func (e *Engine) Strategy() strategy.Strategy { return e.kv }

// cannotFail takes the error of a call that fails only when the engine's
// books are wrong: a release or preemption of a sequence it admitted, a
// free of a buffer it holds. Under -tags invariants (or -race) it panics
// with the error and what failed; otherwise the error is dropped, as the
// call has no caller that could act on it.
func cannotFail(err error, what, id string) {
	if invariants.Enabled && err != nil {
		if id != "" {
			what += " " + id
		}
		panic(fmt.Errorf("sim: %s cannot fail: %w", what, err))
	}
}
