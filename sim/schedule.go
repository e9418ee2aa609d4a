// Scheduling: the batch of a step, admission, KV growth and the
// out-of-memory policies (preempt, reserve, fail). See doc.go, steps 2 and 3.

package sim

import (
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/workload"
)

// schedule builds e.batch, as the configured engine composes a step
// (Config.Engine):
//
//   - vllm-v1, vllm-v0 with ChunkedPrefill and sglang with MixedChunk:
//     running requests first, in e.running's order (admission order but
//     for vLLM 0.5.4-0.5.5, below), each its next prefill
//     chunk or decode token (growing the KV cache), then waiting requests
//     in FCFS order while the token budget, the sequence limit and memory
//     allow. (V0's chunked-prefill scheduler takes running decodes before
//     running prefill chunks; here that is the same order, as a request
//     still prefilling takes all the budget left, so nobody admitted after
//     it can be decoding yet. vLLM 0.5.4 and 0.5.5 are the exception:
//     they requeue the requests admitted in a step ahead of the decodes,
//     so a partial prompt takes its next chunk first; requeueRunning.)
//   - vllm-v0 without ChunkedPrefill, and sglang: prefill first, alone:
//     the running requests' next chunks and the waiting requests that can
//     be admitted; only when there are none do the running requests decode.
//
// It reports whether it preempted anyone.
func (e *Engine) schedule() (preempted bool, err error) {
	c := &e.cfg
	e.batch = e.batch[:0]
	budget := c.MaxBatchTokens
	if c.separateSteps() {
		if budget, _, err = e.scheduleRunning(budget, passPrefills); err != nil {
			return false, err
		}
		if budget, err = e.admitWaiting(budget); err != nil || len(e.batch) > 0 {
			return false, err
		}
		_, preempted, err = e.scheduleRunning(budget, passDecodes)
		if preempted && e.sgl.on {
			e.sglRetracted()
		}
		return preempted, err
	}
	if budget, preempted, err = e.scheduleRunning(budget, passAll); err != nil {
		return preempted, err
	}
	// scheduleRunning takes e.running in order until the budget stops it
	// (or it runs out of requests): the first len(e.batch) are in the step.
	ran := len(e.batch)
	switch {
	case preempted && e.sgl.on:
		e.sglRetracted()
	case preempted && !e.admitAfterPreempt:
		// vLLM V1 admits nobody in a step that had to preempt.
	default:
		// V0 with chunked prefill admits in any step, before the step's
		// victims return to the front of the waiting queue.
		_, err = e.admitWaiting(budget)
	}
	for _, ri := range e.held {
		e.waiting.pushFront(ri)
	}
	e.held = e.held[:0]
	if err != nil {
		return preempted, err
	}
	if e.requeue {
		e.requeueRunning(ran)
	}
	return preempted, nil
}

// requeueRunning reorders e.running as vLLM 0.5.4-0.5.5 requeued it after a
// chunked-prefill step (PrefillFirstRequeue): the first ran requests were
// scheduled from the running queue, the rest of it was left out by the
// token budget (the sequence limit cannot stop passAll: admission keeps
// e.running within it), and admitWaiting appended this step's admissions
// after them. The new order: the left out, the admitted, the scheduled
// decodes, the scheduled prefill chunks.
func (e *Engine) requeueRunning(ran int) {
	if invariants.Enabled {
		// scheduleRunning neither skips nor reorders under passAll, and a
		// preemption victim is always behind the request being scheduled.
		for k, b := range e.batch[:ran] {
			if e.running[k] != b.r {
				panic(fmt.Sprintf("sim: requeue: batch entry %d is request %d, running position %d holds %d", k, b.r, k, e.running[k]))
			}
		}
	}
	q := append(e.requeued[:0], e.running[ran:]...) // left out, then admitted
	for _, b := range e.batch[:ran] {
		if !b.prefill {
			q = append(q, b.r)
		}
	}
	for _, b := range e.batch[:ran] {
		if b.prefill {
			q = append(q, b.r)
		}
	}
	e.requeued = e.running
	e.running = q
}

// runPass says which running requests scheduleRunning takes.
type runPass uint8

const (
	passAll      runPass = iota // prefill chunks and decodes, in e.running's order
	passPrefills                // only requests with prompt tokens left to compute
	passDecodes                 // only requests that decode
)

// scheduleRunning adds the running requests of the pass to e.batch, in
// e.running's order, while the budget and the sequence limit allow: a
// prefilling request its next chunk, a decoding one a token per sample
// (growing its KV, which may preempt). It returns the budget left.
func (e *Engine) scheduleRunning(budget int, pass runPass) (left int, preempted bool, err error) {
	c := &e.cfg
	for i := 0; i < len(e.running) && len(e.batch) < c.MaxSeqs; i++ {
		ri := e.running[i]
		r := &e.reqs[ri]
		if r.prefilled < r.need {
			if pass == passDecodes {
				continue
			}
			chunk := min(r.need-r.prefilled, budget)
			if chunk == 0 {
				break
			}
			e.batch = append(e.batch, entry{r: ri, prefill: true, tokens: chunk, ctx: r.prefilled})
			budget -= chunk
			continue
		}
		if pass == passPrefills {
			continue
		}
		if budget < r.n {
			break
		}
		ok, p, err := e.grow(ri, i)
		if err != nil {
			return budget, preempted, err
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
	return budget, preempted, nil
}

// admitWaiting admits waiting requests in FCFS order while the budget, the
// sequence limit and memory allow, each with its first prefill chunk in
// e.batch. It returns the budget left.
func (e *Engine) admitWaiting(budget int) (int, error) {
	c := &e.cfg
	var room float64
	if e.sgl.on && e.waiting.len() > 0 {
		room = e.sglRoom()
	}
	for e.waiting.len() > 0 && len(e.running) < c.MaxSeqs && budget > 0 {
		ri := e.waiting.front()
		r := &e.reqs[ri]
		if !c.ChunkedPrefill && r.need > budget {
			break
		}
		if e.sgl.on {
			// SGLang's PrefillAdder: NO_TOKEN once the request's prompt and
			// max_new_tokens reach the room left (nobody running: admitted,
			// or it would wait for good).
			need := e.sglNeed(r)
			if need >= room && len(e.running) > 0 {
				break
			}
			room -= need
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
			return budget, nil // wait until memory frees up
		case errors.Is(err, strategy.ErrTooLong):
			e.waiting.popFront()
			e.reject(int(ri))
			continue
		default:
			return budget, fmt.Errorf("sim: admit %s: %w", r.id, err)
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
	return budget, nil
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
	if e.capped && (e.kv.Stats().Tokens+int64(r.n*r.need))*int64(e.cost.kvBytesPerTok) > e.budgetBytes {
		return errBudget
	}
	if err := e.kv.Admit(strategy.SeqID(ri), e.kvRequest(r)); err != nil {
		return err
	}
	r.prefilled = 0
	if pc, ok := e.kv.(strategy.PrefixCaching); ok {
		// Cached prompt blocks need no prefill compute.
		r.prefilled = pc.PrefixHit(strategy.SeqID(ri))
	}
	return nil
}

// kvRequest is what the KV strategy is told of r when it is admitted.
func (e *Engine) kvRequest(r *req) strategy.Request {
	sr := strategy.Request{Prompt: r.need, MaxOutput: r.maxOut - r.gen, TrueOutput: r.output - r.gen, N: r.n}
	if r.prefix != nil {
		sr.PrefixIDs, sr.PrefixSpan = r.prefix, workload.PrefixBlockTokens
	}
	return sr
}

// warmPrompts caches every request's prompt before the run
// (Config.WarmPrompts), giving requests without prefix ids ids of their own.
// A strategy without a prefix cache keeps nothing of an earlier run.
func (e *Engine) warmPrompts() error {
	pc, ok := e.kv.(strategy.PrefixCaching)
	if !ok {
		return nil
	}
	for i := range e.reqs {
		r := &e.reqs[i]
		if r.prefix == nil {
			r.prefix = ownPrefixIDs(i, r.prompt)
		}
		sr := strategy.Request{Prompt: r.prompt, N: 1, PrefixIDs: r.prefix, PrefixSpan: workload.PrefixBlockTokens}
		if _, err := pc.Warm(sr); err != nil {
			return fmt.Errorf("sim: warm prompt of %s: %w", r.id, err)
		}
	}
	return nil
}

// ownPrefixIDs are prefix ids that only request i's prompt has: one per
// workload.PrefixBlockTokens tokens, a fixed mix of (i, block) with the top
// bit set, where trace ids (Mooncake's hash_ids, small counters) never are.
func ownPrefixIDs(i, prompt int) []uint64 {
	n := (prompt + workload.PrefixBlockTokens - 1) / workload.PrefixBlockTokens
	ids := make([]uint64, n)
	for k := range ids {
		ids[k] = workload.PrefixIDMix(i, k) | 1<<63
	}
	return ids
}

// growKV adds one token per sample to running request ri.
func (e *Engine) growKV(ri int32) error {
	if e.capped && (e.kv.Stats().Tokens+int64(e.reqs[ri].n))*int64(e.cost.kvBytesPerTok) > e.budgetBytes {
		return errBudget
	}
	return e.kv.Grow(strategy.SeqID(ri), 1)
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
// puts it at the front of the waiting queue (vLLM's prepend_request); under
// V0's chunked prefill, at the end of schedule (Engine.held).
func (e *Engine) preempt(pos int) {
	ri := e.running[pos]
	r := &e.reqs[ri]
	cannotFail(e.kv.Preempt(strategy.SeqID(ri)), "preempt", r.id)
	e.removeRunning(pos)
	r.ph, r.admitted = phaseWaiting, false
	r.need, r.prefilled = r.prompt+r.gen, 0
	if e.admitAfterPreempt {
		e.held = append(e.held, ri) // schedule puts it back after admission
	} else {
		e.waiting.pushFront(ri)
	}
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
		cannotFail(e.kv.Release(strategy.SeqID(i)), "release of failed", r.id)
		r.admitted = false
	}
	r.ph = phaseFailed
	e.res.RequestsFailedOOM++
	e.event(kind, r.id)
	e.clientEnded() // its client slot frees now, also inside a defrag pause
}

// reject ends request i as one that can never be served.
func (e *Engine) reject(i int) {
	r := &e.reqs[i]
	if r.admitted {
		cannotFail(e.kv.Release(strategy.SeqID(i)), "release of rejected", r.id)
		r.admitted = false
	}
	r.ph = phaseRejected
	e.res.RequestsRejected++
	e.event("reject", r.id)
	e.clientEnded()
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
	if rs, ok := e.kv.(strategy.Reserving); ok {
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

// work sums the batch's work for the step time (cost.go).
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
