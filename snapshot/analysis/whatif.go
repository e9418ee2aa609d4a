package analysis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/snapshot"
)

// DefaultWhatIf are the alternatives Analyze replays after the recorded
// settings: PyTorch's defaults, each setting that changes how the caching
// allocator fragments (expandable segments; max_split_size_mb at three
// cuts, since the right one depends on the sizes in play; rounding to 4
// divisions per power of two; garbage collection at 80% of the device,
// which needs a memory fraction), and gpufrag's other allocators with their
// default settings. Each costs one replay of the trace (a few ms per
// thousand events).
var DefaultWhatIf = []string{
	"caching",
	"caching:expandable_segments:True",
	"caching:max_split_size_mb:64",
	"caching:max_split_size_mb:128",
	"caching:max_split_size_mb:256",
	"caching:roundup_power2_divisions:4",
	"caching:garbage_collection_threshold:0.8,per_process_memory_fraction:1.0",
	"sizeclass",
	"arena",
	"async",
	"direct",
	"vmm",
}

// WhatIf is the outcome of replaying one device's requests under
// alternative allocators.
type WhatIf struct {
	Capacity int64
	// Ops is the length of the replayed op trace: the pre-trace live blocks
	// allocated first, then the trace's allocs and frees, each run of
	// segment_free as empty_cache.
	Ops int
	// OOMRequests counts the trace's oom entries replayed as requests:
	// PyTorch records no alloc event for a request that failed, only the
	// oom entry, so each becomes an alloc of its size, freed at once when
	// an allocator serves it. Every Alternative's OOMs counts them, the
	// recorded settings' included.
	OOMRequests int
	// PrivateRequests counts the allocs replayed in a private pool (CUDA
	// graphs, MemPool; buildOps routes them as the recorded-settings
	// replay does), pre-trace live blocks of private segments included.
	// The caching alternatives serve each from its pool; an allocator
	// without private pools serves them from its default pools
	// (Alternative.UnroutedPrivate).
	PrivateRequests int
	Results         []Alternative
	// Recommendation is a PYTORCH_ALLOC_CONF line (registry.EnvVar; the
	// older PYTORCH_CUDA_ALLOC_CONF takes the same value) (it may be the
	// recorded one); Reason says why.
	Recommendation string
	Reason         string
}

// Alternative is one allocator's replay.
type Alternative struct {
	Settings      string // the allocator spec
	Recorded      bool   // the file's own settings
	PeakReserved  int64
	PeakAllocated int64
	EndReserved   int64
	OOMs          int
	PeakFragRate  float64 // fragmentation rate when reserved peaked
	EndFragRate   float64
	FirstOOM      string // the first failure, in PyTorch's words
	// UnroutedPrivate counts the private-pool requests this allocator,
	// having no private pools, served from its default pools together
	// with the rest (optrace.Result.UnroutedPoolAllocs): its figures then
	// pool memory that PyTorch kept apart.
	UnroutedPrivate int
}

// conf is the PYTORCH_CUDA_ALLOC_CONF value that selects this allocator,
// and false if none does (gpufrag's other allocators): registry.PyTorchConf.
func (a Alternative) conf() (string, bool) {
	s, err := registry.Parse(a.Settings)
	if err != nil {
		return "", false // not replayed: every replayed spec parses
	}
	return s.PyTorchConf()
}

// native reports whether the alternative is a setting of PyTorch's own
// caching allocator rather than another backend.
func (a Alternative) native() bool {
	s, err := registry.Parse(a.Settings)
	return err == nil && s.Kind().PyTorch.Native
}

// buildOps turns a device trace, preceded by the pre-trace live blocks, into
// an op trace. Streams (cudaStream_t values) are renumbered densely in
// order of first use, 0 staying 0. Each alloc carries the pool router
// names (Op.Pool: the entry's pool_id, else the recorded pool of the
// segment its address lies in, as the recorded-settings replay routes it),
// and the live blocks of pre-trace private segments are allocated in their
// pools, so an allocator with private pools (caching) keeps a CUDA graph's
// or MemPool's memory apart as PyTorch did. router nil routes nothing.
// Pools are renumbered densely; at most caching.MaxPrivatePools are named,
// and requests of further pools (a crafted file) go to the default pools.
//
// With consume, the trace is read by Trace.Consume, each chunk forgotten
// once it is ops, for the trace's last reader. Ids are reused once freed
// (an op trace allows it), so the ops hold as many id strings as
// allocations are live at once, not one per alloc.
func buildOps(trace *snapshot.Trace, pre preTrace, router *poolRouter, consume bool) []optrace.Op {
	// Sized before it is filled: grown by append, the ops of a 12.7M-event
	// trace (8.5M, 64 bytes each) reached twice their size while the trace
	// was still live. The size counts an op per alloc, free_completed and
	// run of segment_free and two per oom entry, not the frees a ring
	// buffer lost (rare: append grows the slice for those): counting a
	// possible lost free per alloc made the slice half as large again as
	// the ops, zeroed at once beside the trace.
	n, prev := 0, ""
	for _, sg := range pre.seeds() {
		n += len(sg.Live)
	}
	for _, e := range trace.All() {
		switch e.Action {
		case "alloc", "free_completed":
			n++
		case "oom":
			n += 2
		case "segment_free":
			if prev != "segment_free" {
				n++
			}
		}
		prev = e.Action
	}
	ops := make([]optrace.Op, 0, n)
	streams := map[int64]int{0: 0}
	stream := func(s int64) int {
		n, ok := streams[s]
		if !ok {
			n = len(streams)
			streams[s] = n
		}
		return n
	}
	// Pools are renumbered too ({1, 0}, {2, 0}, … in order of first use):
	// pool ids are opaque 64-bit values, negative ones included, which an
	// op trace does not take.
	pools := map[alloc.PoolID]alloc.PoolID{}
	pool := func(id alloc.PoolID) alloc.PoolID {
		if id == (alloc.PoolID{}) {
			return id
		}
		n, ok := pools[id]
		if !ok {
			if len(pools) >= caching.MaxPrivatePools {
				return alloc.PoolID{}
			}
			n = alloc.PoolID{int64(len(pools)) + 1, 0}
			pools[id] = n
		}
		return n
	}
	route := func(e snapshot.TraceEntry) alloc.PoolID {
		if router == nil {
			return alloc.PoolID{}
		}
		return pool(router.route(e))
	}
	var spare []string // ids whose allocation was freed
	ids := 0
	newID := func() string {
		if k := len(spare); k > 0 {
			id := spare[k-1]
			spare = spare[:k-1]
			return id
		}
		ids++
		return "a" + strconv.Itoa(ids-1)
	}
	free := func(id string) {
		ops = append(ops, optrace.Op{Kind: optrace.Free, ID: id})
		spare = append(spare, id)
	}
	live := map[uint64]string{}
	for _, sg := range pre.seeds() {
		for _, lb := range sg.Live {
			id := newID()
			live[lb.Addr] = id
			ops = append(ops, optrace.Op{Kind: optrace.Alloc, ID: id, Size: lb.Requested, Stream: stream(int64(sg.Stream)), Pool: pool(sg.Pool)})
		}
	}
	entries, prev := trace.All(), ""
	if consume {
		entries = trace.Consume()
	}
	for i, e := range entries {
		action := prev // the entry before
		prev = e.Action
		switch e.Action {
		case "segment_alloc":
			if router != nil {
				router.segmentAlloc(i, e)
			}
		case "alloc":
			if e.Size <= 0 || e.Size > optrace.MaxSize {
				continue
			}
			if old, ok := live[e.Addr]; ok { // a free the ring buffer lost
				free(old)
			}
			id := newID()
			live[e.Addr] = id
			ops = append(ops, optrace.Op{Kind: optrace.Alloc, ID: id, Size: e.Size, Stream: stream(e.Stream), Pool: route(e)})
		case "free_completed":
			if id, ok := live[e.Addr]; ok {
				delete(live, e.Addr)
				free(id)
			}
		case "segment_free":
			if router != nil {
				router.segmentFree(e.Addr)
			}
			if action != "segment_free" { // the first of a run
				ops = append(ops, optrace.Op{Kind: optrace.EmptyCache})
			}
		case "oom":
			// The failed request: no alloc event records it; its pool is
			// the entry's pool_id when it has one.
			if e.Size <= 0 || e.Size > optrace.MaxSize {
				continue
			}
			id := newID()
			p := alloc.PoolID{}
			if e.HasPoolID {
				p = pool(e.PoolID)
			}
			ops = append(ops, optrace.Op{Kind: optrace.Alloc, ID: id, Size: e.Size, Stream: stream(e.Stream), Pool: p})
			free(id)
		}
	}
	return ops
}

// oomRequests counts the oom entries buildOps replays as requests.
func oomRequests(trace *snapshot.Trace) int {
	n := 0
	for _, e := range trace.All() {
		if e.Action == "oom" && e.Size > 0 && e.Size <= optrace.MaxSize {
			n++
		}
	}
	return n
}

// whatIf replays the device's requests through the recorded settings and
// each alternative on a device of capacity bytes.
// release, when not nil, lets the ops be built by consuming the trace and
// drops the snapshot's reference to it then (Options.ReleaseTraces).
func whatIf(trace *snapshot.Trace, pre preTrace, router *poolRouter, settings string, specs []string, capacity int64, parallel int, release func()) (*WhatIf, error) {
	recorded := "caching"
	if settings != "" {
		recorded += ":" + settings
	}
	note := ""
	dev, err := mem.NewDevice(capacity, 0)
	if err != nil {
		return nil, fmt.Errorf("what-if device: %w", err)
	}
	if _, err := registry.New(recorded, dev); err != nil {
		// A file whose settings PyTorch itself would refuse (a hostile or
		// corrupt one): compare against the defaults instead.
		note = fmt.Sprintf(" (the recorded settings %q do not parse: %v; the defaults stand in for them)", settings, err)
		recorded = "caching"
	}
	all := []string{recorded}
	for _, s := range specs {
		if s != recorded {
			all = append(all, s)
		}
	}
	oomReqs := oomRequests(trace)
	ops := buildOps(trace, pre, router, release != nil)
	if release != nil {
		trace = nil
		release()
	}
	results, err := replayAll(ops, all, capacity, parallel)
	if err != nil {
		return nil, fmt.Errorf("what-if replay: %w", err)
	}
	w := &WhatIf{Capacity: capacity, Ops: len(ops), OOMRequests: oomReqs}
	for i := range ops {
		if ops[i].Pool != (alloc.PoolID{}) {
			w.PrivateRequests++
		}
	}
	for i, r := range results {
		alt := Alternative{Settings: r.Allocator, Recorded: i == 0, PeakReserved: r.PeakReservedBytes,
			PeakAllocated: r.PeakAllocatedBytes, EndReserved: r.EndReservedBytes, OOMs: r.OOMs,
			PeakFragRate: r.AtPeak.FragRate, EndFragRate: r.End.FragRate, UnroutedPrivate: r.UnroutedPoolAllocs}
		if r.FirstOOM != nil {
			alt.FirstOOM = r.FirstOOM.Message
		}
		w.Results = append(w.Results, alt)
	}
	w.Recommendation, w.Reason = recommend(w.Results)
	w.Reason += note
	return w, nil
}

// replayAll replays ops through an allocator per spec, each on its own
// device of capacity bytes, up to parallel at once; results in spec order.
func replayAll(ops []optrace.Op, specs []string, capacity int64, parallel int) ([]optrace.Result, error) {
	return optrace.ReplayAllWorkers(ops, specs, func(s string) (alloc.Allocator, error) {
		dev, err := mem.NewDevice(capacity, 0)
		if err != nil {
			return nil, err
		}
		return registry.New(s, dev)
	}, max(parallel, 1))
}

// recommend picks the configurable alternative with the fewest OOMs, then
// the lowest peak reserved, then the least fragmentation at the peak; it
// replaces the recorded settings only if it avoids an OOM or saves at least
// 1% of the peak (and 2 MiB): smaller differences are within what a
// slightly different run would change.
func recommend(alts []Alternative) (string, string) {
	rec := alts[0]
	recConf, _ := rec.conf()
	var cands []Alternative
	for _, a := range alts[1:] {
		if _, ok := a.conf(); ok {
			cands = append(cands, a)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.OOMs != b.OOMs {
			return a.OOMs < b.OOMs
		}
		if a.PeakReserved != b.PeakReserved {
			return a.PeakReserved < b.PeakReserved
		}
		return a.PeakFragRate < b.PeakFragRate
	})
	line := func(c string) string { return registry.EnvVar + "=" + c }
	if len(cands) == 0 {
		return line(recConf), "no alternative that " + registry.EnvVar + " can select was replayed"
	}
	best := cands[0]
	margin := max(rec.PeakReserved/100, 2*mem.MiB)
	if !best.native() {
		// Switching the backend is a bigger change than a setting: prefer a
		// caching setting that does as well within the margin.
		for _, c := range cands[1:] {
			if c.native() && c.OOMs == best.OOMs && c.PeakReserved <= best.PeakReserved+margin {
				best = c
				break
			}
		}
	}
	bestConf, _ := best.conf()
	note := ""
	if strings.Contains(bestConf, "garbage_collection_threshold") {
		note = "; garbage collection acts only under a memory fraction (torch.cuda.set_per_process_memory_fraction)"
	}
	if best.UnroutedPrivate > 0 {
		// Its figures pool memory that PyTorch keeps apart (CUDA graphs'
		// pools): say so rather than compare them silently.
		note += fmt.Sprintf("; its replay served the %d requests of private pools (CUDA graphs, MemPool) from its default pools "+
			"(it has none in gpufrag's model), which can understate its peak", best.UnroutedPrivate)
	}
	switch {
	case best.OOMs < rec.OOMs:
		return line(bestConf), fmt.Sprintf("it avoids %d of the %d out-of-memory errors the recorded settings (%s) hit in replay, "+
			"with peak reserved %s%s", rec.OOMs-best.OOMs, rec.OOMs, orDefault(recConf), mem.FormatBytes(best.PeakReserved), note)
	case best.OOMs == rec.OOMs && best.PeakReserved+margin <= rec.PeakReserved:
		return line(bestConf), fmt.Sprintf("peak reserved %s instead of %s with the recorded settings (%s), %.0f%% less, "+
			"fragmentation at the peak %.2f instead of %.2f%s", mem.FormatBytes(best.PeakReserved), mem.FormatBytes(rec.PeakReserved),
			orDefault(recConf), 100*float64(rec.PeakReserved-best.PeakReserved)/float64(rec.PeakReserved),
			best.PeakFragRate, rec.PeakFragRate, note)
	}
	return line(recConf), fmt.Sprintf("keep the recorded settings (%s): no alternative avoids an out-of-memory error "+
		"or lowers peak reserved (%s) by 1%% or more", orDefault(recConf), mem.FormatBytes(rec.PeakReserved))
}

func orDefault(conf string) string {
	if conf == "" {
		return "the defaults"
	}
	return conf
}
