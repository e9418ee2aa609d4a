// Retiming: a run recorded once and timed again under other profiles
// without running the engine. A calibration's inner loop (calib's joint
// fit) evaluates hundreds of profiles on the same runs; for the runs where
// every request is due at time 0 (a static batch, a burst of prompts, a
// closed-loop client with no pause), which requests share which step
// depends only on memory and the schedule, never on how long a step takes,
// so the steps can be kept and summed again: exactly what a run gives.
// An open-loop run with later arrivals can be recorded too; its retiming
// keeps the recorded steps and lets a step that began after an idle wait
// begin no earlier than that arrival, which approximates a run under
// another profile (whose steps would group the requests differently) and
// is exact under the recorded one.

package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/workload"
)

// ErrTimeDependent is returned (wrapped) by Record for a run whose steps
// depend on their times in a way retiming cannot follow: requests arrive
// after 0 under a client's cap, or the run has a duration, early stopping
// or a defrag policy.
var ErrTimeDependent = errors.New("sim: the run's steps depend on their times")

// recorder keeps what Retime needs while the engine runs.
type recorder struct {
	steps []stepWork
	ends  []int64 // each step's end in the recorded run
	waits []int64 // each step's start when it began after an idle wait, else -1
	done  []int32 // completed requests, in completion order
	gaps  []gapGroup
}

// gapGroup is n inter-token gaps that end at the step ending at and began
// at the step ending at prev: in a recorder, times (ns); in a Recording,
// those steps' indexes.
type gapGroup struct{ at, prev, n int64 }

// gap records n gaps from prev to at, merged with the last group when
// it is the same pair (a step's requests that decoded in the step before).
func (r *recorder) gap(at, prev, n int64) {
	if l := len(r.gaps); l > 0 && r.gaps[l-1].at == at && r.gaps[l-1].prev == prev {
		r.gaps[l-1].n += n
		return
	}
	r.gaps = append(r.gaps, gapGroup{at, prev, n})
}

func (r *recorder) step(w stepWork, start, end int64) {
	r.steps = append(r.steps, w)
	r.ends = append(r.ends, end)
	wait := int64(-1)
	if n := len(r.ends); n == 1 && start > 0 || n > 1 && start > r.ends[n-2] {
		wait = start
	}
	r.waits = append(r.waits, wait)
}

// none marks a request's missing first token or completion in a
// Recording.
const none = -2

// Recording is a run's steps, and when each request was sent, got its
// first token and completed, counted in steps.
type Recording struct {
	cfg   Config // validated
	res   Result
	steps []stepWork
	waits []int64 // recorder.waits
	timed bool    // requests arrive after 0: Retime approximates
	// overlap: recorded under a profile with Overhead.ScheduleOverlap,
	// which under a client's cap admits the requests it sends a step later.
	overlap bool
	// Per request with a first token or a completion: the step it was
	// sent after (-1: at sentAt), of its first token (none: no first
	// token), of its completion (none: it did not complete), and its
	// output tokens.
	sent, first, finish []int32
	sentAt              []int64
	output              []int32
	done                []int32    // indexes of the above, in completion order
	gaps                []gapGroup // the inter-token gaps, by step index
}

// Record runs reqs under cfg (with its Profile, or the roofline) and keeps
// its steps for Retime. The config must have no Duration, EarlyStop or
// defrag policy, and under a client's cap (MaxConcurrency) every request
// must arrive at 0 (else an error wrapping ErrTimeDependent). Timed says
// whether requests arrive after 0, so that Retime approximates.
func Record(cfg Config, reqs []workload.Request) (*Recording, error) {
	switch {
	case cfg.Duration > 0:
		return nil, fmt.Errorf("%w: it stops at a duration", ErrTimeDependent)
	case cfg.EarlyStop != EarlyStop{}:
		return nil, fmt.Errorf("%w: it may stop early", ErrTimeDependent)
	case cfg.Defrag.Policy != DefragOff:
		return nil, fmt.Errorf("%w: its defrag policy acts on time", ErrTimeDependent)
	}
	timed := false
	for _, r := range reqs {
		if r.Arrival != 0 && cfg.MaxConcurrency > 0 {
			return nil, fmt.Errorf("%w: request %s arrives at %d ns under a client's cap", ErrTimeDependent, clip(r.ID), r.Arrival)
		}
		timed = timed || r.Arrival != 0
	}
	e, err := New(cfg, reqs)
	if err != nil {
		return nil, err
	}
	e.rec = &recorder{}
	res, err := e.Run()
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	rc := &Recording{cfg: e.cfg, res: res, steps: e.rec.steps, waits: e.rec.waits, timed: timed, overlap: e.overlap}
	ends := e.rec.ends
	at := func(t int64) int32 {
		if t == 0 && (len(ends) == 0 || ends[0] > 0) {
			return -1
		}
		i, ok := slices.BinarySearch(ends, t)
		if !ok {
			panic(fmt.Sprintf("sim: recorded time %d is no step's end", t)) // every event happens at a step's end
		}
		return int32(i)
	}
	idx := make([]int32, len(e.reqs))
	for i := range e.reqs {
		r := &e.reqs[i]
		idx[i] = -1
		if r.first < 0 && r.ph != phaseDone {
			continue
		}
		idx[i] = int32(len(rc.first))
		first, fin := int32(none), int32(none)
		if r.first >= 0 {
			first = at(r.first)
		}
		if r.ph == phaseDone {
			fin = at(r.finish)
		}
		if timed {
			rc.sent, rc.sentAt = append(rc.sent, -1), append(rc.sentAt, r.sent)
		} else {
			rc.sent, rc.sentAt = append(rc.sent, at(r.sent)), append(rc.sentAt, 0)
		}
		rc.first = append(rc.first, first)
		rc.finish = append(rc.finish, fin)
		rc.output = append(rc.output, int32(r.output))
	}
	for _, ri := range e.rec.done {
		rc.done = append(rc.done, idx[ri])
	}
	rc.gaps = make([]gapGroup, len(e.rec.gaps))
	for i, g := range e.rec.gaps {
		rc.gaps[i] = gapGroup{int64(at(g.at)), int64(at(g.prev)), g.n}
	}
	return rc, nil
}

// Result is the recorded run's result.
func (rc *Recording) Result() Result { return rc.res }

// Timed reports whether requests arrive after 0: Retime is then exact
// only under the recorded profile.
func (rc *Recording) Timed() bool { return rc.timed }

// Retime returns the recorded run's result with its timing recomputed
// under p (nil: the config's roofline): every step's time, then the
// latencies, the span and the throughput, exactly as a run under p gives
// them when the run is not Timed (else the recorded steps timed under p).
// p must be for the recorded config's GPU and engine.
//
// Under a client's cap above 1 (Config.MaxConcurrency), a profile whose
// Overhead.ScheduleOverlap is not the recording's admits the requests the
// client sends at other steps: an error wrapping ErrTimeDependent.
func (rc *Recording) Retime(p *Profile) (Result, error) {
	c := rc.cfg
	if overlap := p != nil && p.Overhead.ScheduleOverlap; overlap != rc.overlap && c.MaxConcurrency > 1 {
		return Result{}, fmt.Errorf("%w: recorded with schedule overlap %v, retimed with %v under a client's cap of %d: its requests join other steps",
			ErrTimeDependent, rc.overlap, overlap, c.MaxConcurrency)
	}
	c.Profile = p
	if _, err := c.validate(); err != nil {
		return Result{}, err
	}
	cm := newCostModel(c)
	var reqNs int64
	if p != nil {
		reqNs = p.Overhead.RequestNs
	}
	ends := make([]int64, len(rc.steps))
	var now int64
	for i, w := range rc.steps {
		now = max(now, rc.waits[i]) + cm.stepTime(w)
		ends[i] = now
	}
	t := func(i int32) int64 {
		if i < 0 {
			return 0
		}
		return ends[i]
	}
	sent := func(k int) int64 {
		if rc.sent[k] < 0 {
			return rc.sentAt[k]
		}
		return ends[rc.sent[k]]
	}
	res := rc.res
	var ttft, tpot, e2e []float64
	for k, f := range rc.first {
		if f != none {
			ttft = append(ttft, float64(t(f)-sent(k)+reqNs)/1e9)
		}
	}
	var normSum float64
	var normN int
	for _, k := range rc.done {
		first, fin, out := t(rc.first[k]), t(rc.finish[k]), rc.output[k]
		if out > 1 {
			tpot = append(tpot, float64(fin-first)/1e9/float64(out-1))
		}
		e := float64(fin-sent(int(k))+reqNs) / 1e9
		e2e = append(e2e, e)
		if out > 0 {
			normSum += e / float64(out)
			normN++
		}
	}
	res.SimulatedSeconds = float64(now) / 1e9
	res.OutputTokensPerS = 0
	if now > 0 {
		res.OutputTokensPerS = float64(res.OutputTokens) / res.SimulatedSeconds
	}
	res.TTFT, res.TPOT, res.E2E = latency(ttft), latency(tpot), latency(e2e)
	var itl itlTally
	for _, g := range rc.gaps {
		itl.add(ends[g.at]-ends[g.prev], g.n)
	}
	res.ITL = itl.latency()
	res.NormalizedLatencyMean = 0
	if normN > 0 {
		res.NormalizedLatencyMean = normSum / float64(normN)
	}
	return res, nil
}
