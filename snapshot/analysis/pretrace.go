package analysis

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// errExpandable: the device has expandable segments or segment_map events,
// which replay does not model (their virtual ranges are not in the file).
var errExpandable = errors.New("expandable segments are not replayed (their reserved virtual ranges are not recorded)")

// MaxReplayStreams bounds the distinct streams of a device that Analyze
// replays. The caching model keeps a best-fit index per stream and pool
// (about 4 KiB each once it holds a block), so a crafted file of 45,000
// segments on as many streams made every replay hold 300 MB of indexes; a
// PyTorch process uses a handful of streams. A device with more is
// diagnosed but not replayed, and Fidelity.Skipped says why.
const MaxReplayStreams = 1024

// checkStreams refuses to replay device d when its segments and trace
// entries name more than MaxReplayStreams streams.
func checkStreams(s *snapshot.Snapshot, d int, trace *snapshot.Trace) error {
	seen := map[int64]bool{}
	for _, seg := range s.Segments {
		if seg.Device == d {
			seen[seg.Stream] = true
		}
	}
	for _, e := range trace.All() {
		seen[e.Stream] = true
	}
	if len(seen) > MaxReplayStreams {
		return fmt.Errorf("%d streams, more than the %d a replay models (a PyTorch process uses a handful; "+
			"the model keeps an index per stream)", len(seen), MaxReplayStreams)
	}
	return nil
}

// preTrace is the state a device's trace started from.
type preTrace struct {
	// segs are the default-pool segments, each with its live blocks in
	// address order; the replay keys live allocations by their recorded
	// address (Live[j].Addr).
	segs   []caching.SeedSegment
	blocks int // Σ len(segs[i].Live)
	// private are the private-pool segments (CUDA graphs, MemPool), each
	// with its Pool, seeded into that pool of the model; skipped is their
	// number. The what-if replays (buildOps) allocate their live blocks in
	// their pools.
	private []caching.SeedSegment
	skipped int
	// clipped counts live blocks whose size had to be guessed (freed during
	// the trace, so only the request is known) and was cut to fit.
	clipped int
}

type liveBlock struct {
	size, requested int64
	guessed         bool // freed during the trace: size is the rounded request
}

type segInfo struct {
	size   int64
	stream int64
	small  bool
	pool   [2]int64 // segment_pool_id; zero: the default pools
}

// reconstruct returns the segments and live blocks of device d that
// existed before the first event of its trace. Walking the trace backwards
// from the final segments would undo each event; what that leaves at an
// address is decided by the address's first event alone, so one pass in
// order finds it (the history is read as it is kept, never backwards): a
// block whose first event is a free_completed was live before the trace
// (one whose first is an alloc was not; one with no event is as the final
// snapshot has it), and a segment whose first event is a segment_free
// existed before it (a segment_alloc: it did not). Sizes of blocks that were freed during the trace are not recorded
// (free_completed carries the request); they are taken as the request
// rounded under cfg and cut at the next live block or the segment end. In
// the large pool a block keeps a tail of up to 1 MiB unsplit, which the
// guess leaves as a free sliver instead: no large request fits in it and it
// merges on free, so the choice never changes an address. An oversize
// request (at least a finite max_split_size) is never split, so its block
// is taken to reach the next live block or the segment end.
func reconstruct(s *snapshot.Snapshot, d int, trace *snapshot.Trace, cfg caching.Config) (preTrace, error) {
	segs := map[uint64]segInfo{}
	live := map[uint64]liveBlock{}
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		if seg.IsExpandable {
			return preTrace{}, errExpandable
		}
		segs[seg.Address] = segInfo{size: seg.TotalSize, stream: seg.Stream, small: seg.SegmentType == "small", pool: seg.PoolID}
		for _, b := range seg.Blocks {
			if b.State != snapshot.StateInactive {
				live[b.Address] = liveBlock{size: b.Size, requested: max(b.RequestedSize, 1)}
			}
		}
	}
	// The addresses whose first block or segment event has been seen.
	blockSeen, segSeen := map[uint64]struct{}{}, map[uint64]struct{}{}
	first := func(seen map[uint64]struct{}, a uint64) bool {
		if _, ok := seen[a]; ok {
			return false
		}
		seen[a] = struct{}{}
		return true
	}
	for _, e := range trace.All() {
		switch e.Action {
		case "alloc":
			if first(blockSeen, e.Addr) {
				delete(live, e.Addr)
			}
		case "free_completed":
			if e.Size > 0 && first(blockSeen, e.Addr) {
				live[e.Addr] = liveBlock{size: caching.RoundSize(cfg, e.Size), requested: e.Size, guessed: true}
			}
		case "segment_alloc":
			if first(segSeen, e.Addr) {
				delete(segs, e.Addr)
			}
		case "segment_free":
			if first(segSeen, e.Addr) {
				segs[e.Addr] = segInfo{size: e.Size, stream: e.Stream, small: e.Size <= 2*mem.MiB, pool: e.PoolID}
			}
		case "segment_map", "segment_unmap":
			return preTrace{}, errExpandable
		}
	}
	var pre preTrace
	addrs := make([]uint64, 0, len(segs))
	for a := range segs {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	liveAddrs := make([]uint64, 0, len(live))
	for a := range live {
		liveAddrs = append(liveAddrs, a)
	}
	sort.Slice(liveAddrs, func(i, j int) bool { return liveAddrs[i] < liveAddrs[j] })
	k := 0
	for i, a := range addrs {
		si := segs[a]
		end := a + uint64(si.size)
		if i+1 < len(addrs) && addrs[i+1] < end {
			return preTrace{}, fmt.Errorf("pre-trace segments at %#x and %#x overlap: the trace does not match the snapshot", a, addrs[i+1])
		}
		for k < len(liveAddrs) && liveAddrs[k] < a {
			k++ // a live block outside every pre-trace segment: the trace is inconsistent there
		}
		seed := caching.SeedSegment{Addr: a, Size: si.size, Stream: int(si.stream), Small: si.small}
		for ; k < len(liveAddrs) && liveAddrs[k] < end; k++ {
			la := liveAddrs[k]
			lb := live[la]
			limit := end
			if k+1 < len(liveAddrs) && liveAddrs[k+1] < end {
				limit = liveAddrs[k+1]
			}
			if la+uint64(lb.size) > limit {
				lb.size = int64(limit-la) / 512 * 512
				pre.clipped++
			} else if lb.guessed && !si.small && cfg.MaxSplitSize > 0 && lb.size >= cfg.MaxSplitSize {
				// An oversize request is never split: it took its whole
				// free block, best guessed as reaching the next live block.
				lb.size = int64(limit-la) / 512 * 512
			}
			if lb.size <= 0 {
				continue
			}
			seed.Live = append(seed.Live, caching.SeedBlock{Addr: la, Size: lb.size, Requested: min(lb.requested, lb.size)})
		}
		if si.pool != [2]int64{} {
			seed.Pool = caching.PoolID(si.pool)
			pre.private = append(pre.private, seed)
			pre.skipped++
			continue
		}
		pre.blocks += len(seed.Live)
		pre.segs = append(pre.segs, seed)
	}
	return pre, nil
}
