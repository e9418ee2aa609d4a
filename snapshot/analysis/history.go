package analysis

import (
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// The sources of a replay (Fidelity.Source).
const (
	SourceTrace   = "trace"   // the device trace's recorded events
	SourceHistory = "history" // an order rebuilt from legacy block histories
)

// useHistory reports whether device d is replayed from block histories:
// its trace has no alloc event (PyTorch 2.0 kept a single snapshot entry by
// default) but some block of the device carries a history (legacy format).
func useHistory(s *snapshot.Snapshot, d int, trace *snapshot.Trace) bool {
	for _, e := range trace.All() {
		if e.Action == "alloc" {
			return false
		}
	}
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		for _, b := range seg.Blocks {
			if len(b.History) > 0 {
				return true
			}
		}
	}
	return false
}

// replayHistory rebuilds device d from its legacy block histories through a
// caching model configured with cfg, and compares the result with the
// recorded layout.
//
// The order is reconstructed, not recorded: segments in address order, and
// within a segment its blocks in address order. A live block is allocated
// with its current history entry's request (history[0], whose address is
// the block's); a live block without one, and every free stretch, with a
// placeholder of the stretch's size (pieces of at most 1 MiB in a small
// segment, so they stay in the small pool). Earlier allocations that the
// history of a free block records are allocated in address order where they
// do not overlap one another, the rest of the stretch by placeholders; those
// of a live block overlap it and are not replayed (SkippedHistoryEntries).
// Placeholders and earlier allocations stay allocated until every segment is
// built and are freed then, in address order, which leaves the recorded free
// blocks: freeing them sooner would open holes our invented order put there,
// and a later request would fall into them, which says nothing about the
// model. So when a segment's first request arrives every other segment is
// full, the model must obtain a new segment (given the recorded address
// through the VA hook, never seeded), and each later request of the segment
// is cut from its free tail. What this tests: the segment size the model
// chooses for the first request (rounding, the 2 MiB / 20 MiB / rounded-up
// rules), the block size of every request (round_size) and the split rules
// (the 1 MiB large-pool remainder, oversize blocks), and the pool choice;
// a wrong size moves every later address of the segment. What it cannot
// test: the best-fit choice among cached blocks, frees and merges, or
// anything that depends on the real order, which the file does not keep.
func replayHistory(s *snapshot.Snapshot, d int, cfg caching.Config, settings string, lastEvent int, top uint64, skip error, opts Options) run {
	var r run
	f := &Fidelity{Settings: settings, Source: SourceHistory}
	r.fidelity = f
	var segs []snapshot.Segment
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		if seg.IsExpandable {
			f.Skipped = errExpandable.Error()
			return r
		}
		if seg.PoolID != [2]int64{} {
			f.PrivateSegments++
			continue
		}
		segs = append(segs, seg)
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].Address < segs[j].Address })
	for _, seg := range segs {
		for _, b := range seg.Blocks {
			n, _ := historyCounts(b)
			f.Allocs += n
		}
	}
	if skip != nil {
		f.Skipped = skip.Error()
		return r
	}
	a, v, err := replayAllocator(cfg, freshBase(top, nil))
	if err != nil {
		f.Skipped = err.Error()
		return r
	}
	h := &historyReplay{f: f, a: a, v: v, cfg: cfg, max: opts.MaxMismatches}
	for _, seg := range segs {
		h.segment(seg)
	}
	// Free the placeholders and earlier allocations, in address order.
	sort.SliceStable(h.transient, func(i, j int) bool { return h.transient[i].Addr < h.transient[j].Addr })
	for _, blk := range h.transient {
		_ = a.Free(blk.Handle)
	}
	f.FinalBlocks, f.FinalBlockMatches = compareFinal(s, d, a.Layout())
	st := a.Stats()
	fr := frag.FragRate(a.LargestFreeBlock(), st.Reserved-st.Allocated)
	r.timeline = []Point{{Event: max(lastEvent, 0), Reserved: st.Reserved, Allocated: st.Allocated, FragRate: fr}}
	return r
}

// historyCounts returns how many history entries of block b the replay
// allocates and how many it cannot (earlier allocations inside a live block).
func historyCounts(b snapshot.Block) (replayed, skipped int) {
	if b.State == snapshot.StateInactive {
		return len(b.History), 0 // those overlapping others are counted when met
	}
	if len(b.History) > 0 && b.History[0].Addr == b.Address {
		return 1, len(b.History) - 1
	}
	return 0, len(b.History)
}

type historyReplay struct {
	f         *Fidelity
	a         *caching.Allocator
	v         *vaSource
	cfg       caching.Config
	max       int
	transient []alloc.Block // placeholders and earlier allocations, freed at the end

	seg     snapshot.Segment
	blk     int  // index of the block being rebuilt
	created bool // the model obtained the segment's own cudaMalloc
}

func (h *historyReplay) mismatch(m Mismatch) {
	if len(h.f.Mismatches) < h.max {
		h.f.Mismatches = append(h.f.Mismatches, m)
	}
}

func (h *historyReplay) where() string {
	return fmt.Sprintf("segment %#x block %d", h.seg.Address, h.blk)
}

// segment rebuilds one recorded segment.
func (h *historyReplay) segment(seg snapshot.Segment) {
	h.seg, h.created = seg, false
	h.f.HistorySegments++
	h.v.armed, h.v.want = true, seg.Address
	for i, b := range seg.Blocks {
		h.blk = i
		end := b.Address + uint64(b.Size)
		if b.State != snapshot.StateInactive {
			n, skipped := historyCounts(b)
			h.f.SkippedHistoryEntries += skipped
			if n == 1 {
				h.entry(b.History[0], false)
			} else {
				h.placeholder(b.Address, end, false)
			}
			continue
		}
		// A free block: the earlier allocations its history records, in
		// address order where they do not overlap, placeholders around them.
		hist := append([]snapshot.HistoryEntry(nil), b.History...)
		sort.SliceStable(hist, func(x, y int) bool { return hist[x].Addr < hist[y].Addr })
		pos := b.Address
		for _, e := range hist {
			if e.Addr < pos || e.RealSize <= 0 || e.Addr+uint64(caching.RoundSize(h.cfg, e.RealSize)) > end {
				h.f.Allocs--
				h.f.SkippedHistoryEntries++
				continue
			}
			if e.Addr > pos {
				h.placeholder(pos, e.Addr, true)
			}
			pos = e.Addr + uint64(caching.RoundSize(h.cfg, e.RealSize))
			if got, ok := h.entry(e, true); ok && got.Addr == e.Addr {
				pos = got.Addr + uint64(got.Size)
			}
		}
		if pos < end {
			h.placeholder(pos, end, true)
		}
	}
	h.v.armed = false
	if !h.created {
		h.mismatch(Mismatch{Where: fmt.Sprintf("segment %#x", seg.Address), Action: "segment_alloc", Want: uint64(seg.TotalSize),
			Note: "never obtained: the model served the segment's requests from blocks it had cached"})
	}
}

// alloc serves one request and accounts for the segment the model may have
// obtained doing so.
func (h *historyReplay) alloc(size int64) (alloc.Block, error) {
	h.v.called = false
	blk, err := h.a.Alloc(size, int(h.seg.Stream))
	if !h.v.called {
		return blk, err
	}
	h.f.SegmentAllocs++
	if h.created {
		h.f.ExtraSegments++
		h.mismatch(Mismatch{Where: h.where(), Action: "extra segment", Size: size,
			Note: fmt.Sprintf("model obtained a second segment (%d bytes) for a request of %d bytes inside the recorded segment", h.v.gotSize, size)})
		return blk, err
	}
	h.created, h.v.armed = true, false
	if h.v.recorded && h.v.gotSize == h.seg.TotalSize {
		h.f.SegmentSizeMatches++
	} else {
		h.mismatch(Mismatch{Where: fmt.Sprintf("segment %#x", h.seg.Address), Action: "segment_alloc", Want: uint64(h.seg.TotalSize),
			Note: fmt.Sprintf("asked for %d bytes serving the first request (%d bytes) of the segment", h.v.gotSize, size)})
	}
	return blk, err
}

// entry allocates one history entry and compares its address.
func (h *historyReplay) entry(e snapshot.HistoryEntry, transient bool) (alloc.Block, bool) {
	if e.RealSize <= 0 {
		h.mismatch(Mismatch{Where: h.where(), Action: "alloc", Size: e.RealSize, Want: e.Addr, Note: ": no request size recorded"})
		return alloc.Block{}, false
	}
	blk, err := h.alloc(e.RealSize)
	if err != nil {
		h.mismatch(Mismatch{Where: h.where(), Action: "alloc", Size: e.RealSize, Want: e.Addr, Note: ": " + err.Error()})
		return alloc.Block{}, false
	}
	if blk.Addr == e.Addr {
		h.f.AddressMatches++
	} else {
		h.mismatch(Mismatch{Where: h.where(), Action: "alloc", Size: e.RealSize, Want: e.Addr, Got: blk.Addr})
	}
	if transient {
		h.transient = append(h.transient, blk)
	}
	return blk, true
}

// placeholder fills [lo, hi) of the current segment with requests of the
// stretch's size (at most 1 MiB each in a small segment, so they stay in the
// small pool). A large-pool stretch of 1 MiB or less cannot be requested
// from the large pool; PyTorch never leaves one, so it is reported.
func (h *historyReplay) placeholder(lo, hi uint64, transient bool) {
	small := h.seg.SegmentType == "small"
	if small && hi-lo > uint64(2*mem.MiB) {
		h.mismatch(Mismatch{Where: h.where(), Action: "placeholder", Size: int64(hi - lo), Want: lo,
			Note: fmt.Sprintf("a %d-byte free stretch at %#x cannot lie in a small segment (2 MiB)", hi-lo, lo)})
		return
	}
	for at := lo; at < hi; {
		n := int64(hi - at)
		if small {
			n = min(n, mem.MiB)
		} else if n <= mem.MiB {
			h.mismatch(Mismatch{Where: h.where(), Action: "placeholder", Size: n, Want: at,
				Note: fmt.Sprintf("a %d-byte stretch at %#x of a large segment cannot be rebuilt: large-pool requests exceed 1 MiB", n, at)})
			return
		}
		h.f.Placeholders++
		blk, err := h.alloc(n)
		if err != nil {
			h.mismatch(Mismatch{Where: h.where(), Action: "placeholder", Size: n, Want: at, Note: err.Error()})
			return
		}
		if blk.Addr != at {
			h.mismatch(Mismatch{Where: h.where(), Action: "placeholder", Size: n, Want: at,
				Note: fmt.Sprintf("placeholder of %d bytes for %#x placed at %#x", n, at, blk.Addr)})
		}
		if transient {
			h.transient = append(h.transient, blk)
		}
		at += uint64(n)
	}
}
