package analysis

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// replayCapacity is the modelled device of the fidelity replay: the largest
// the device model takes (mem.MaxCapacity, 1 PiB), so the model never runs
// out where the real device did not (the trace's own out-of-memory ladder
// shows up as segment_free events, replayed as empty_cache) and every
// recorded segment fits.
const replayCapacity = mem.MaxCapacity

// Fidelity is how well our caching model reproduces a recorded trace.
type Fidelity struct {
	// Settings is the configuration replayed (PYTORCH_CUDA_ALLOC_CONF
	// syntax, empty for the defaults).
	Settings string
	// Skipped says why the trace was not replayed; empty when it was.
	Skipped string
	// Source says what was replayed: SourceTrace, the device trace's
	// recorded events, or SourceHistory, an allocation order rebuilt from
	// legacy block histories (a file with no alloc event whose blocks carry
	// a history; see replayHistory's rules in docs/json.md). With
	// SourceHistory the order is reconstructed, not recorded: Allocs counts
	// history entries, SegmentAllocs the segments the model obtained.
	Source string
	// HistorySegments, Placeholders and SkippedHistoryEntries describe a
	// SourceHistory replay: the recorded segments rebuilt, the placeholder
	// requests that filled free stretches (and live blocks without a
	// history), and the history entries not replayed (earlier allocations
	// that overlap a live block or one another).
	HistorySegments, Placeholders, SkippedHistoryEntries int
	// SeededSegments and SeededBlocks are the pre-trace segments and their
	// live blocks rebuilt before the first event.
	SeededSegments, SeededBlocks int
	// PrivateSegments are the pre-trace segments of private pools (CUDA
	// graphs, MemPool), seeded into their pools (counted in SeededSegments).
	PrivateSegments int
	// PrivateAllocs are the alloc events routed to a private pool (by the
	// entry's pool_id, else by the recorded pool of the segment the
	// recorded address lies in; see poolRouter).
	PrivateAllocs int
	// ClippedBlocks are pre-trace blocks freed during the trace whose
	// guessed size (the rounded request) overlapped the next block and
	// was cut to fit.
	ClippedBlocks int
	// Allocs and AddressMatches: recorded alloc events, and those the model
	// placed at the recorded address.
	Allocs, AddressMatches int
	// SegmentAllocs and SegmentSizeMatches: recorded segment_alloc events,
	// and those for which the model, serving the alloc that follows,
	// obtained a new segment of the recorded size.
	SegmentAllocs, SegmentSizeMatches int
	// ExtraSegments counts segments the model obtained where the trace
	// recorded none.
	ExtraSegments int
	// SegmentFrees and SegmentFreeMatches: recorded segment_free events
	// (empty_cache, the out-of-memory ladder, garbage collection), and
	// those where the model held a wholly free segment at that address,
	// which it then released.
	SegmentFrees, SegmentFreeMatches int
	// Frees are the free_completed events replayed; UnknownFrees name an
	// address with no live allocation in the model.
	Frees, UnknownFrees int
	// FinalBlocks and FinalBlockMatches compare the model's final layout
	// with the snapshot's segments: blocks with the same address, size and
	// liveness.
	FinalBlocks, FinalBlockMatches int
	// Mismatches lists the first differences (all are counted above).
	Mismatches []Mismatch
}

// Mismatch is one event the model did not reproduce.
type Mismatch struct {
	Event int // index in the device trace
	// Where names the place instead of Event when set (a history replay:
	// "segment 0x… block N").
	Where  string
	Action string // "alloc", "segment_alloc", "extra segment", "free"
	Size   int64  // the event's size
	Want   uint64 // recorded address (alloc) or size (segment_alloc)
	Got    uint64 // the model's
	Note   string
}

func (m Mismatch) String() string {
	at := fmt.Sprintf("event %d", m.Event)
	if m.Where != "" {
		at = m.Where
	}
	switch m.Action {
	case "alloc":
		if m.Got == 0 && m.Note != "" {
			return fmt.Sprintf("%s: alloc of %d bytes at %#x failed%s", at, m.Size, m.Want, m.Note)
		}
		return fmt.Sprintf("%s: alloc of %d bytes at %#x, model chose %#x%s", at, m.Size, m.Want, m.Got, m.Note)
	case "segment_alloc":
		return fmt.Sprintf("%s: segment_alloc of %d bytes, model %s", at, m.Want, m.Note)
	}
	return fmt.Sprintf("%s: %s: %s", at, m.Action, m.Note)
}

// Point is one moment of the timeline.
type Point struct {
	Event     int   // index of the last event applied
	TimeUS    int64 // its time_us, 0 when the file has none
	Reserved  int64
	Allocated int64
	FragRate  float64 // frag.FragRate of the model's layout
}

// OOM explains one oom entry of the trace.
type OOM struct {
	Event      int
	TimeUS     int64
	Requested  int64 // the rounded request, as recorded
	AllocSize  int64 // the segment PyTorch tried to cudaMalloc ("Tried to allocate")
	Stream     int64
	DeviceFree int64 // as CUDA reported it
	// The model's state just before (zero when the trace was not replayed).
	Reserved, Allocated, CachedFree int64
	LargestFree                     int64 // largest free block in the request's pool and stream
	// PrivateCachedFree is the part of CachedFree held in private pools
	// (caching.Allocator.PrivateCachedFree): not free for this request.
	PrivateCachedFree int64
	Health            float64
	// Cause is "fragmentation", "demand" or "unknown"; Why says it in words.
	Cause, Why string
	Frames     []snapshot.Frame
	// During is the innermost record_function range open on the device at
	// the entry's time (external_annotations), UserMetadata the entry's
	// user_metadata; "" when the file has none.
	During, UserMetadata string
}

// run is what replayTrace produces.
type run struct {
	fidelity         *Fidelity
	timeline         []Point
	ooms             []OOM
	recordedCapacity int64 // from oom entries: reserved + device_free; 0 if none
}

// recordedConfig turns allocator_settings into a caching configuration and
// its PYTORCH_CUDA_ALLOC_CONF text. The typed keys win over the raw string;
// keys the typed form lacks (max_non_split_rounding_mb,
// per_process_memory_fraction) come from the string when it parses.
func recordedConfig(st snapshot.AllocatorSettings) (caching.Config, string) {
	if st == nil {
		return caching.Config{}, ""
	}
	var cfg caching.Config
	if conf, ok := st.Conf(); ok {
		if c, err := caching.ParseConfig(conf); err == nil {
			cfg = caching.Config{MaxNonSplitRounding: c.MaxNonSplitRounding, PerProcessMemoryFraction: c.PerProcessMemoryFraction}
		}
	}
	if m, ok := st.MaxSplitSize(); ok && m > 0 {
		cfg.MaxSplitSize = m
	}
	if g, ok := st.GarbageCollectionThreshold(); ok && g > 0 && g < 1 {
		cfg.GCThreshold = g
	}
	if e, ok := st.ExpandableSegments(); ok {
		cfg.ExpandableSegments = e
	}
	if divs, ok := st.RoundupPower2Divisions(); ok {
		for _, dv := range divs {
			if dv.StartMiB <= 0 || dv.StartMiB&(dv.StartMiB-1) != 0 {
				continue
			}
			idx := min(bits.Len64(uint64(dv.StartMiB))-1, len(cfg.RoundupDivisions)-1)
			cfg.RoundupDivisions[idx] = dv.Divisions
		}
	}
	return cfg, cfg.String()
}

// vaSource hands the model's new segments their recorded addresses.
type vaSource struct {
	want     uint64 // the recorded segment_alloc address, when armed
	armed    bool
	called   bool     // the model asked for a range since arming
	gotSize  int64    // the size it asked for
	recorded bool     // it got the recorded address
	fresh    uint64   // next address for a segment the trace did not record
	ranges   rangeSet // the model's live segments (by what we handed out)
}

func (v *vaSource) reserve(size int64) uint64 {
	v.called, v.gotSize, v.recorded = true, size, false
	if v.armed && v.want%uint64(mem.PageSize) == 0 && v.want+uint64(size) > v.want && !v.ranges.overlaps(v.want, size) {
		v.recorded = true
		v.ranges.set(v.want, size)
		return v.want
	}
	a := v.fresh
	v.fresh += uint64(mem.RoundUp(max(size, 1), mem.PageSize))
	v.ranges.set(a, size)
	return a
}

// replayTrace seeds the pre-trace state into a caching model and replays
// the trace, comparing every alloc address and segment_alloc size.
func replayTrace(s *snapshot.Snapshot, d int, trace *snapshot.Trace, cfg caching.Config, settings string,
	top uint64, pre preTrace, preErr error, opts Options) run {
	var r run
	f := &Fidelity{Settings: settings, Source: SourceTrace}
	r.fidelity = f
	for _, e := range trace.All() {
		if e.Action == "alloc" {
			f.Allocs++
		}
		if e.Action == "segment_alloc" {
			f.SegmentAllocs++
		}
	}
	if preErr != nil {
		f.Skipped = preErr.Error()
		r.ooms = explainOOMs(trace)
		return r
	}
	if cfg.ExpandableSegments {
		f.Skipped = errExpandable.Error()
		r.ooms = explainOOMs(trace)
		return r
	}
	n := trace.Len()
	if n == 0 {
		return r
	}
	a, v, err := replayAllocator(cfg, freshBase(top, trace))
	if err != nil {
		f.Skipped = err.Error()
		return r
	}
	seeds := pre.seeds()
	handles, err := a.Seed(seeds)
	if err != nil {
		f.Skipped = "rebuilding the pre-trace segments: " + err.Error()
		return r
	}
	f.SeededSegments, f.SeededBlocks = len(seeds), len(handles)
	f.PrivateSegments, f.ClippedBlocks = pre.skipped, pre.clipped
	router := newPoolRouter(s, d, trace, pre)
	live := make(map[uint64]alloc.Handle, len(handles))
	k := 0
	for _, sg := range seeds {
		v.ranges.set(sg.Addr, sg.Size)
		for _, lb := range sg.Live {
			live[lb.Addr] = handles[k]
			k++
		}
	}
	mismatch := func(m Mismatch) {
		if len(f.Mismatches) < opts.MaxMismatches {
			f.Mismatches = append(f.Mismatches, m)
		}
	}
	step := max(1, (n+opts.TimelinePoints-1)/opts.TimelinePoints)
	pending := -1 // index of a segment_alloc awaiting its alloc
	var pendingAddr uint64
	var pendingSize int64 // its address and size
	for i, e := range trace.All() {
		switch e.Action {
		case "segment_alloc":
			if pending >= 0 {
				mismatch(Mismatch{Event: pending, Action: "segment_alloc", Want: uint64(pendingSize), Note: "never saw the alloc it was for"})
			}
			pending, pendingAddr, pendingSize = i, e.Addr, e.Size
			router.segmentAlloc(i, e)
		case "alloc":
			v.armed, v.called = pending >= 0, false
			if v.armed {
				v.want = pendingAddr
			}
			blk, err := a.AllocIn(router.route(e), e.Size, int(e.Stream))
			v.armed = false
			if err != nil {
				mismatch(Mismatch{Event: i, Action: "alloc", Size: e.Size, Want: e.Addr, Note: ": " + err.Error()})
			} else {
				if blk.Addr == e.Addr {
					f.AddressMatches++
				} else {
					mismatch(Mismatch{Event: i, Action: "alloc", Size: e.Size, Want: e.Addr, Got: blk.Addr})
				}
				if old, ok := live[e.Addr]; ok {
					_ = a.Free(old) // the trace lost this free (ring buffer); keep the model consistent
				}
				live[e.Addr] = blk.Handle
			}
			switch {
			case pending >= 0 && v.called && v.gotSize == pendingSize:
				f.SegmentSizeMatches++
			case pending >= 0 && v.called:
				mismatch(Mismatch{Event: pending, Action: "segment_alloc", Want: uint64(pendingSize),
					Note: fmt.Sprintf("asked for %d bytes", v.gotSize)})
			case pending >= 0:
				mismatch(Mismatch{Event: pending, Action: "segment_alloc", Want: uint64(pendingSize),
					Note: "reused a cached block instead"})
			case v.called:
				f.ExtraSegments++
				mismatch(Mismatch{Event: i, Action: "extra segment", Size: e.Size,
					Note: fmt.Sprintf("model obtained a %d-byte segment the trace did not record", v.gotSize)})
			}
			pending = -1
		case "free_completed":
			h, ok := live[e.Addr]
			if !ok {
				f.UnknownFrees++
				mismatch(Mismatch{Event: i, Action: "free", Size: e.Size, Want: e.Addr,
					Note: fmt.Sprintf("free_completed at %#x: no live allocation there", e.Addr)})
				break
			}
			delete(live, e.Addr)
			if err := a.Free(h); err == nil {
				f.Frees++
			}
		case "segment_free":
			f.SegmentFrees++
			router.segmentFree(e.Addr)
			if a.ReleaseSegment(e.Addr) {
				f.SegmentFreeMatches++
				v.ranges.del(e.Addr)
			} else {
				mismatch(Mismatch{Event: i, Action: "segment_free", Size: e.Size, Want: e.Addr,
					Note: fmt.Sprintf("segment_free at %#x: the model has no wholly free segment there", e.Addr)})
			}
		case "oom":
			r.ooms = append(r.ooms, explainOOM(i, e, a))
			distrust(&r.ooms[len(r.ooms)-1], f.UnknownFrees)
			// A plausible device: device_free recorded, below 1 PiB.
			if c := r.ooms[len(r.ooms)-1]; c.DeviceFree > 0 && c.DeviceFree < replayCapacity && c.Reserved < replayCapacity {
				r.recordedCapacity = max(r.recordedCapacity, c.Reserved+c.DeviceFree)
			}
		}
		if i%step == step-1 || i == n-1 {
			st := a.Stats()
			fr := frag.FragRate(a.LargestFreeBlock(), st.Reserved-st.Allocated)
			r.timeline = append(r.timeline, Point{Event: i, TimeUS: e.TimeUS, Reserved: st.Reserved, Allocated: st.Allocated, FragRate: fr})
		}
	}
	if pending >= 0 {
		mismatch(Mismatch{Event: pending, Action: "segment_alloc", Want: uint64(pendingSize), Note: "trace ends before its alloc"})
	}
	f.PrivateAllocs = router.private
	f.FinalBlocks, f.FinalBlockMatches = compareFinal(s, d, a.Layout())
	return r
}

// freshBase is a page-aligned address 1 TiB above every address in the
// file (top: the end of its highest segment), for segments the trace did
// not record.
func freshBase(top uint64, trace *snapshot.Trace) uint64 {
	const gap = 1 << 40
	for _, e := range trace.All() {
		if e.Size > 0 {
			top = max(top, e.Addr+uint64(e.Size))
		}
	}
	if top > math.MaxUint64/2 { // a corrupt file: nothing sensible lies above
		return mem.DefaultVABase
	}
	return (top + gap) &^ (uint64(mem.PageSize) - 1)
}

// compareFinal counts the snapshot's blocks of device d (private pools
// included) that the model's final layout has with the same address, size
// and liveness.
func compareFinal(s *snapshot.Snapshot, d int, l mem.Layout) (total, same int) {
	type key struct {
		addr uint64
		size int64
		live bool
	}
	model := map[key]bool{}
	for _, sg := range l.Segments {
		for _, b := range sg.Blocks {
			model[key{b.Addr, b.Size, b.State != mem.Free}] = true
		}
	}
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		for _, b := range seg.Blocks {
			total++
			if model[key{b.Address, b.Size, b.State != snapshot.StateInactive}] {
				same++
			}
		}
	}
	return total, same
}

// traceCapacity is the device memory that device d's oom entries record,
// read from the trace itself, for a device whose trace was not replayed
// (expandable segments, a history replay, a pre-trace state that could
// not be rebuilt): at each oom entry the bytes reserved then, the final
// segments' less the segment events recorded after it (segment_alloc and
// segment_map add, segment_free and segment_unmap take away), plus its
// device_free; the most over all of them, as replayTrace takes the
// model's. 0 when no entry gives a plausible device (device_free
// recorded, both below 1 PiB).
func traceCapacity(s *snapshot.Snapshot, d int, trace *snapshot.Trace) int64 {
	type at struct{ net, free int64 }
	var ooms []at
	var net int64 // Σ of the segment events so far
	for _, e := range trace.All() {
		switch e.Action {
		case "segment_alloc", "segment_map":
			net += e.Size
		case "segment_free", "segment_unmap":
			net -= e.Size
		case "oom":
			ooms = append(ooms, at{net, e.DeviceFree})
		}
	}
	if len(ooms) == 0 {
		return 0
	}
	var final int64
	for _, seg := range s.Segments {
		if seg.Device == d {
			final += seg.TotalSize
		}
	}
	var c int64
	for _, o := range ooms {
		reserved := final - (net - o.net)
		if o.free > 0 && o.free < replayCapacity && reserved >= 0 && reserved < replayCapacity {
			c = max(c, reserved+o.free)
		}
	}
	return c
}

// explainOOMs explains the oom entries of a trace that was not replayed.
func explainOOMs(trace *snapshot.Trace) []OOM {
	var out []OOM
	for i, e := range trace.All() {
		if e.Action == "oom" {
			out = append(out, explainOOM(i, e, nil))
		}
	}
	return out
}

// explainOOM explains oom entry e, event i of the trace; a is the model
// just before (nil when there is none).
func explainOOM(i int, e snapshot.TraceEntry, a *caching.Allocator) OOM {
	o := OOM{Event: i, TimeUS: e.TimeUS, Requested: e.Size, AllocSize: oomSegment(e.Size),
		Stream: e.Stream, DeviceFree: e.DeviceFree, Frames: e.Frames, Cause: "unknown", UserMetadata: e.UserMetadata}
	if a == nil {
		o.Why = fmt.Sprintf("requested %s with %s free on the device; the trace was not replayed, "+
			"so the allocator's free blocks at that moment are unknown",
			mem.FormatBytes(o.Requested), mem.FormatBytes(o.DeviceFree))
		return o
	}
	// The model's state from its counters and free sets, not a Layout
	// (a Layout per oom entry made a trace of oom entries over 45,000
	// segments quadratic): cached free is reserved − allocated, as
	// frag.Compute counts it for cudaMalloc segments.
	st := a.Stats()
	o.Reserved, o.Allocated, o.CachedFree = st.Reserved, st.Allocated, st.Reserved-st.Allocated
	o.Health = frag.Health(a.LargestFreeBlock(), o.CachedFree)
	o.LargestFree = a.LargestFreeIn(o.Requested <= mem.MiB, int(e.Stream))
	// Free memory cached in private pools (CUDA graphs) serves no
	// default-pool request and stays while captures use it.
	o.PrivateCachedFree = a.PrivateCachedFree()
	private := ""
	if o.PrivateCachedFree > 0 {
		private = fmt.Sprintf("; %s more is cached in private pools (CUDA graphs, MemPool), which this request cannot use",
			mem.FormatBytes(o.PrivateCachedFree))
	}
	switch {
	case o.CachedFree-o.PrivateCachedFree+o.DeviceFree >= o.AllocSize:
		o.Cause = "fragmentation"
		usable := o.CachedFree - o.PrivateCachedFree
		o.Why = fmt.Sprintf("%s was free in total (%s cached inside segments, largest block %s; %s on the device), "+
			"but no cached block of this pool fits %s and the device could not provide a %s segment: "+
			"the cached memory is split among segments that live blocks keep from being released%s",
			mem.FormatBytes(usable+o.DeviceFree), mem.FormatBytes(usable), mem.FormatBytes(o.LargestFree),
			mem.FormatBytes(o.DeviceFree), mem.FormatBytes(o.Requested), mem.FormatBytes(o.AllocSize), private)
	default:
		o.Cause = "demand"
		usable := o.CachedFree - o.PrivateCachedFree
		o.Why = fmt.Sprintf("the request needs a %s segment but only %s was free in total (%s cached, %s on the device)%s: "+
			"no allocator setting helps; the workload needs more memory",
			mem.FormatBytes(o.AllocSize), mem.FormatBytes(usable+o.DeviceFree),
			mem.FormatBytes(usable), mem.FormatBytes(o.DeviceFree), private)
	}
	return o
}

// replayAllocator builds the caching model a replay runs on: a device of
// replayCapacity whose fresh segments get the addresses vaSource hands out
// (recorded ones where the file has them, fresh ones from base otherwise),
// with the file's settings less the memory fraction (a fraction of 1 PiB
// would mean nothing).
func replayAllocator(cfg caching.Config, base uint64) (*caching.Allocator, *vaSource, error) {
	dev, err := mem.NewDevice(replayCapacity, 0)
	if err != nil {
		return nil, nil, err
	}
	v := &vaSource{fresh: base}
	dev.SetVAHook(v.reserve)
	cfg.PerProcessMemoryFraction = 0
	a, err := caching.New(dev, cfg)
	if err != nil {
		return nil, nil, err
	}
	return a, v, nil
}
