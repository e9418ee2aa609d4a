// Defragmentation policies inside the engine: when to compact, how much, and
// what it costs on the timeline. See doc.go for the overview.

package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// DefragPolicy says when the engine compacts the allocator's memory.
type DefragPolicy int

const (
	// DefragOff never compacts.
	DefragOff DefragPolicy = iota
	// DefragThreshold compacts when health falls below Defrag.Low, then not
	// again until health has risen above Defrag.High (hysteresis), so a
	// layout compaction cannot improve is not compacted at every sample.
	DefragThreshold
	// DefragAdaptive compacts when the fragmentation rate exceeds the p95 of
	// its own recent history (Defrag.Window samples): a per-instance
	// threshold instead of a guessed one; only in a quiet period
	// (Defrag.QuietWindow).
	DefragAdaptive
	// DefragOnline moves at most the bytes one step's budget allows
	// (Defrag.StepBudget) before each step while fragmentation is above the
	// floor: many small pauses instead of one long one; only in a quiet
	// period (Defrag.QuietWindow).
	DefragOnline
	// DefragOffline drains: in a quiet period (no request waiting) it stops
	// admitting, lets the step finish, copies the live KV out to a temporary
	// buffer, releases and re-allocates it contiguously and copies it back,
	// priced as two copies of every live byte; at most once per
	// Defrag.OfflineGap.
	DefragOffline
)

var defragNames = [...]string{"off", "threshold", "adaptive", "online", "offline"}

// String returns the name ParseDefragPolicy accepts.
func (p DefragPolicy) String() string {
	if p < 0 || int(p) >= len(defragNames) {
		return fmt.Sprintf("DefragPolicy(%d)", int(p))
	}
	return defragNames[p]
}

// ParseDefragPolicy parses off, threshold, adaptive, online or offline.
func ParseDefragPolicy(s string) (DefragPolicy, error) {
	for i, n := range defragNames {
		if strings.EqualFold(s, n) {
			return DefragPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: defrag policy %q: want off, threshold, adaptive, online or offline", ErrBadConfig, s)
}

// Defrag configures compaction. Zero fields take DefaultDefrag's values.
// The defaults below but QuietWindow were chosen from the reasons given with
// each, not fitted to a workload; they were validated, unchanged, on the
// defrag suite (experiments 23-36: 14 workloads none of them was chosen on).
// QuietWindow was tuned on the defrag tuning set
// (experiments/testdata/defrag-tune, 14 other workloads), see
// defaultQuietWindow.
type Defrag struct {
	Policy DefragPolicy
	// Low and High are the threshold policy's health bounds: act below Low,
	// re-arm above High. 0.5 is the field's "act" line (frag.HealthAct);
	// 0.8 leaves room so that one compaction that lands at 0.6 does not
	// re-trigger at once.
	Low, High float64
	// Floor is the fragmentation rate below which compaction is not worth
	// it (15%: below it, a compaction frees little; issue 5's "not worth
	// it" rule).
	Floor float64
	// Window is the adaptive policy's history in samples (300: five minutes
	// at the default one-second samples).
	Window int
	// StepBudget is the online policy's pause per step in ns (1 ms: under
	// 5% of a decode step of 20-40 ms, so TPOT p99 moves by a few percent).
	StepBudget int64
	// OfflineGap is the least virtual time between two offline drains in ns
	// (10 minutes).
	OfflineGap int64
	// QuietWindow is how long in ns no admission may have failed for the
	// adaptive and online policies to compact of their own accord; they
	// also wait until no request waits (the offline policy's quiet period).
	// Compactions for an allocation that just failed (reactive) and the
	// threshold policy's are not held back. See defaultQuietWindow.
	QuietWindow int64
	// Reactive also compacts for the request that just failed (GoalFit)
	// before its out-of-memory behaviour applies; on by default whenever a
	// policy is on. It compacts for a running request's growth and for the
	// step's activation buffers; for a request that failed to be admitted
	// only when the strategy reserves a sequence's whole KV at admission
	// (contiguous-max), see defragFit.
	NoReactive bool
	Cost       defrag.CostModel
}

// defaultQuietWindow is Defrag.QuietWindow's default, 30 s of virtual time.
//
// A compaction ahead of need while requests wait or admissions fail packs
// live KV into the holes the next steps' admissions, growth and activation
// buffers would take: on the defrag tuning set, adaptive and online
// completed fewer requests than no compaction on 3 of 14 workloads (up to
// 57 fewer) with compactions at any time, and 0 of 13 (the overloaded 14th
// loses with every policy, see experiments/31-*.yaml) with them held to a
// quiet period. Compacting only while requests wait did worse than at any
// time. Windows of 5 to 120 s gave every cell the same sign, 30 s to 120 s
// the same totals.
//
// Tuned on the defrag tuning set (experiments/testdata/defrag-tune/*.yaml,
// 14 workloads that are not suite cells: the suite's traces at other rates,
// on other GPU and model pairs, with other seeds); validated on the defrag
// suite (experiments 23-36).
const defaultQuietWindow = 30_000_000_000

// DefaultDefrag returns the documented defaults with the policy off.
func DefaultDefrag() Defrag {
	return Defrag{Low: 0.5, High: 0.8, Floor: 0.15, Window: 300, StepBudget: 1_000_000, OfflineGap: 600_000_000_000,
		QuietWindow: defaultQuietWindow}
}

func (d Defrag) withDefaults() Defrag {
	def := DefaultDefrag()
	if d.Low == 0 {
		d.Low = def.Low
	}
	if d.High == 0 {
		d.High = def.High
	}
	if d.Floor == 0 {
		d.Floor = def.Floor
	}
	if d.Window == 0 {
		d.Window = def.Window
	}
	if d.StepBudget == 0 {
		d.StepBudget = def.StepBudget
	}
	if d.OfflineGap == 0 {
		d.OfflineGap = def.OfflineGap
	}
	if d.QuietWindow == 0 {
		d.QuietWindow = def.QuietWindow
	}
	return d
}

// DefragResult is the defrag part of a Result (`"defrag"` in the JSON).
type DefragResult struct {
	Policy     string    `json:"policy"`
	Runs       int       `json:"runs"`
	BytesMoved int64     `json:"bytes_moved"`
	LowerBound int64     `json:"lower_bound_bytes"`
	FreedBytes int64     `json:"freed_bytes"`
	Pause      Quantiles `json:"pause_s"`
	PauseTotal float64   `json:"pause_total_s"`
	// OOMsWithout is requests_failed_oom of the same run with defrag off;
	// the caller fills it in (it needs a second run).
	OOMsWithout int    `json:"ooms_without"`
	Skipped     string `json:"skipped,omitempty"` // why the policy could not act
}

// defragger is the engine's compaction state.
type defragger struct {
	cfg     Defrag
	rel     alloc.Relocator
	mv      strategy.Movable
	armed   bool
	history []float64 // adaptive: recent frag rates (ring)
	hpos    int
	lastRun int64 // offline: time of the last drain; -1 before
	pauses  []float64
	index   map[uint64]alloc.Handle
	// grows is set when the strategy's sequences grow after admission
	// (contiguous-grow): reactive compaction then serves only the requests
	// already running (defragFit).
	grows bool
	// admitFailures is the strategy's Stats().AdmitFailures when defragFit
	// last looked: a larger count says the failure it reacts to is an
	// admission's.
	admitFailures int64
	// quietAdmitFailures is AdmitFailures when quiet last looked, and
	// lastAdmitFailure the virtual time it saw the count rise (-1: never).
	quietAdmitFailures int64
	lastAdmitFailure   int64
	blocks             []alloc.Block
	lastFrag           float64 // the fragmentation rate the policy last looked at
	check              func()  // tests: called after every compaction

	// The latest sample, until the policy has looked at it (checkDefrag):
	// sampleUntil sets it, as a step or an idle wait can take several.
	unseen                   bool
	unseenFrag, unseenHealth float64
}

// initDefrag sets the compactor up, or records why it cannot act: the KV
// must sit in movable blocks of an allocator that relocates them and whose
// segments are not all VMM-backed (as is of e.al).
func (e *Engine) initDefrag(as registry.Spec) {
	d := e.cfg.Defrag.withDefaults()
	e.res.Defrag = &DefragResult{Policy: d.Policy.String()}
	rel, ok1 := e.al.(alloc.Relocator)
	mv, ok2 := e.kv.(strategy.Movable)
	switch {
	case !ok2:
		e.res.Defrag.Skipped = e.kv.Name() + " keeps no KV in movable allocator blocks"
	case !ok1 || as.MapsPages():
		e.res.Defrag.Skipped = e.al.Spec() + " cannot relocate blocks (or needs no compaction)"
	default:
		e.dg = &defragger{cfg: d, rel: rel, mv: mv, armed: true, lastRun: -1, lastAdmitFailure: -1, index: map[uint64]alloc.Handle{},
			grows: !e.cfg.KV.Reserves()}
	}
}

// checkDefrag lets the defrag policy look at the latest sample, once.
func (e *Engine) checkDefrag() {
	if e.dg != nil && e.dg.unseen {
		e.dg.unseen = false
		e.defragSample(e.dg.unseenFrag, e.dg.unseenHealth)
	}
}

// defragSample runs at every sample with the layout's fragmentation rate.
func (e *Engine) defragSample(fragRate, health float64) {
	dg := e.dg
	if dg == nil {
		return
	}
	dg.lastFrag = fragRate
	e.noteAdmitFailures()
	switch dg.cfg.Policy {
	case DefragThreshold:
		if health > dg.cfg.High {
			dg.armed = true
		}
		if dg.armed && health < dg.cfg.Low && fragRate >= dg.cfg.Floor {
			dg.armed = false
			e.compact(defrag.Goal{Kind: defrag.GoalCompact}, 0, false)
		}
	case DefragAdaptive:
		if len(dg.history) < dg.cfg.Window {
			dg.history = append(dg.history, fragRate)
		} else {
			dg.history[dg.hpos] = fragRate
			dg.hpos = (dg.hpos + 1) % dg.cfg.Window
		}
		if len(dg.history) >= 30 && fragRate >= dg.cfg.Floor {
			s := slices.Clone(dg.history)
			slices.Sort(s)
			if fragRate > nearestRank(s, 0.95) && e.quiet() {
				e.compact(defrag.Goal{Kind: defrag.GoalCompact}, 0, false)
			}
		}
	case DefragOffline:
		quiet := e.waiting.len() == 0
		if quiet && fragRate >= dg.cfg.Floor && (dg.lastRun < 0 || e.now-dg.lastRun >= dg.cfg.OfflineGap) {
			dg.lastRun = e.now
			e.compact(defrag.Goal{Kind: defrag.GoalCompact}, 0, true)
		}
	}
}

// noteAdmitFailures notes the time of the latest failed admission it sees
// (at every sample and before every step of the online policy).
func (e *Engine) noteAdmitFailures() {
	dg := e.dg
	if af := e.kv.Stats().AdmitFailures; af > dg.quietAdmitFailures {
		dg.quietAdmitFailures = af
		dg.lastAdmitFailure = e.now
	}
}

// quiet reports whether the adaptive and online policies may compact of
// their own accord now: no request waits and no admission has failed for
// Defrag.QuietWindow (defaultQuietWindow says why).
func (e *Engine) quiet() bool {
	dg := e.dg
	e.noteAdmitFailures()
	if e.waiting.len() > 0 {
		return false
	}
	return dg.lastAdmitFailure < 0 || e.now-dg.lastAdmitFailure >= dg.cfg.QuietWindow
}

// defragStep runs before each step (the online policy).
func (e *Engine) defragStep() {
	dg := e.dg
	if dg == nil || dg.cfg.Policy != DefragOnline || dg.lastFrag < dg.cfg.Floor {
		return
	}
	budget := defrag.BytesWithin(dg.cfg.StepBudget, e.cfg.GPU, dg.cfg.Cost)
	if budget > 0 && e.quiet() {
		e.compact(defrag.Goal{Kind: defrag.GoalCompact}, budget, false)
	}
}

// defragFit compacts to make room for an allocation of size bytes that
// just failed; it reports whether it moved anything.
//
// It does not compact for a request that failed to be admitted when the
// strategy grows its sequences after admission (contiguous-grow). The
// memory such a compaction packs together would go to the newcomer, and the
// running requests, whose next doubling needed it, fail instead: a running
// request that fails loses the prefill and decode work it has done, while
// one refused at admission has done none (with OnOOMFail it fails either
// way, with the other behaviours it waits). On the long-prompt Mooncake
// variants of the defrag suite (experiments/*-defrag-*.yaml) this trade
// cost more completed requests than the compaction won;
// TestDefragNoWorseThanOff is a minimal case. Growth failures and
// activation buffers, which serve work already under way, are compacted
// for. A strategy that reserves a sequence's whole KV at admission
// (contiguous-max) has no later growth to starve, so its
// admissions are compacted for too.
func (e *Engine) defragFit(size int64) bool {
	dg := e.dg
	if dg == nil || dg.cfg.Policy == DefragOff || dg.cfg.NoReactive || size <= 0 {
		return false
	}
	// The strategy counts its failed admissions; the failure this call
	// reacts to is the latest one.
	af := e.kv.Stats().AdmitFailures
	admission := af > dg.admitFailures
	dg.admitFailures = af
	if admission && dg.grows {
		return false
	}
	return e.compact(defrag.Goal{Kind: defrag.GoalFit, Size: size}, 0, false)
}

// compact plans on the allocator's layout, applies the moves through the
// allocator's Relocate (telling the strategy every new address) and puts
// the pause on the timeline. A drain is priced as copying every live KV
// byte out and back.
//
// It does not call EmptyCache: the segments the moves emptied stay cached,
// where the next allocation finds them (best fit), and the allocator's own
// out-of-memory path returns them to the device when an allocation needs a
// new segment, as PyTorch's does. An EmptyCache here also released every
// other wholly free segment, among them those the step's activation buffers
// come back to at every step, so the next step's KV allocations took that
// memory as new segments and its activations failed: with the online
// policy, which compacts before every step, activation OOMs rose by half on
// the Mooncake variants of the defrag suite (experiments/*-defrag-*.yaml).
func (e *Engine) compact(goal defrag.Goal, maxBytes int64, drain bool) bool {
	dg := e.dg
	p, err := defrag.PlanLayout(e.al.Layout(), goal, defrag.Options{Allocator: e.cfg.Alloc, MaxBytes: maxBytes})
	if err != nil {
		// A goal the allocator's rules cannot plan for (fit on size-class
		// slots) is no compaction; any other error is the engine's bug.
		if !errors.Is(err, defrag.ErrGoal) {
			cannotFail(err, "defrag plan", goal.String())
		}
		return false
	}
	if len(p.Moves) == 0 {
		return false
	}
	clear(dg.index)
	dg.blocks = dg.mv.LiveBlocks(dg.blocks[:0])
	for _, b := range dg.blocks {
		dg.index[b.Addr] = b.Handle
	}
	handleAt := func(addr uint64) (alloc.Handle, bool) {
		h, ok := dg.index[addr]
		return h, ok
	}
	var moveErr error
	moved := func(h alloc.Handle, b alloc.Block) {
		for a, x := range dg.index {
			if x == h {
				delete(dg.index, a)
				break
			}
		}
		dg.index[b.Addr] = h
		if err := dg.mv.Moved(h, b); err != nil && moveErr == nil {
			moveErr = err
		}
	}
	if err := defrag.Apply(dg.rel, p, handleAt, moved); err != nil && !errors.Is(err, defrag.ErrMove) {
		moveErr = err
	}
	if moveErr != nil {
		// A plan the allocator refuses is a bug in the planner or the
		// engine's address book: report it loudly in the result.
		e.res.Defrag.Skipped = "compaction failed: " + moveErr.Error()
		dg.cfg.Policy = DefragOff
		return false
	}
	if dg.check != nil {
		dg.check()
	}
	pause := defrag.Cost(p, e.cfg.GPU, dg.cfg.Cost)
	if drain {
		live := e.kv.Usage().Held()
		pause = defrag.CopyCost(2*live, 2, e.cfg.GPU, dg.cfg.Cost)
	}
	r := e.res.Defrag
	r.Runs++
	r.BytesMoved += p.BytesMoved
	r.LowerBound += p.LowerBound
	r.FreedBytes += p.FreedBytes
	dg.pauses = append(dg.pauses, float64(pause)/1e9)
	e.now += pause
	e.event("defrag", fmt.Sprintf("%s %s", goal, humanMoved(p.BytesMoved)))
	return true
}

func humanMoved(n int64) string { return fmt.Sprintf("%d bytes", n) }

// finishDefrag fills the pause figures.
func (e *Engine) finishDefrag() {
	if e.res.Defrag == nil || e.dg == nil {
		return
	}
	e.res.Defrag.Pause = quantiles(e.dg.pauses)
	for _, p := range e.dg.pauses {
		e.res.Defrag.PauseTotal += p
	}
}

// DefragPolicyNames are the policies ParseDefragPolicy takes, in order.
func DefragPolicyNames() []string { return slices.Clone(defragNames[:]) }
