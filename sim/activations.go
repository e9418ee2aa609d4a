// Activations: each step's transient buffers through the allocator, in the
// order one transformer layer uses them. See doc.go, step 4.

package sim

import "github.com/gpufrag/gpufrag/alloc"

// activationBufs is the state of the step's activation buffers.
type activationBufs struct {
	live   []alloc.Handle // buffers held in the current step, in allocation order
	failed int64          // size of the buffer that last failed (for defragFit)
}

// actKey is what a step's activation buffers depend on: its tokens and
// sampled positions (their sizes are those times per-run constants).
type actKey struct{ tokens, sampled int64 }

// activations allocates the step's transient buffers through the allocator
// in the order one transformer layer uses them (the caching allocator reuses
// them from layer to layer). When they do not fit, the request with the most
// tokens in the step fails with an OOM error, as the engine process would
// have raised torch.OutOfMemoryError for its batch, and the step is retried
// without it. A step whose buffers repeat a closed round trip makes no call
// (tripMemo.start).
func (e *Engine) activations(w stepWork) stepWork {
	if e.trips.start(w) {
		return w
	}
	for len(e.batch) > 0 {
		if e.allocActivations(w) {
			return w
		}
		if e.defragFit(e.act.failed) && e.allocActivations(w) {
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
			e.act.failed = size
			return 0, false
		}
		e.act.live = append(e.act.live, b.Handle)
		e.trips.n++
		return b.Handle, true
	}
	f := func(h alloc.Handle) {
		if h == 0 {
			return
		}
		cannotFail(e.al.Free(h), "free of an activation buffer", "")
		for i := len(e.act.live) - 1; i >= 0; i-- {
			if e.act.live[i] == h {
				e.act.live = append(e.act.live[:i], e.act.live[i+1:]...)
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

// freeActivations frees the buffers the step still holds, newest first.
func (e *Engine) freeActivations() {
	for i := len(e.act.live) - 1; i >= 0; i-- {
		cannotFail(e.al.Free(e.act.live[i]), "free of an activation buffer", "")
	}
	e.act.live = e.act.live[:0]
}
