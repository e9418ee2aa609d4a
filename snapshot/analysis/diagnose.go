package analysis

import (
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/snapshot"
)

// SegmentWaste is one segment and the memory it wastes.
type SegmentWaste struct {
	Address    uint64
	Size       int64
	Pool       string // "small", "large" or "pool a_b" for a private pool
	Stream     int64
	Expandable bool
	LiveBlocks int
	FreeBlocks int
	// Free is the segment's inactive bytes; Stranded equals it when a live
	// block keeps the segment from being released, else 0.
	Free, Stranded int64
	LargestFree    int64
	// InternalWaste is Σ (size − requested) over the segment's live blocks.
	InternalWaste int64
}

// Waste is what the segment costs beyond what callers asked for and could
// not be given back by empty_cache: stranded free bytes plus rounding.
func (s SegmentWaste) Waste() int64 { return s.Stranded + s.InternalWaste }

// Group is the memory of one stream or one pool.
type Group struct {
	Name        string
	Segments    int
	Reserved    int64
	Active      int64 // allocated and pending-free blocks
	CachedFree  int64
	LargestFree int64
	Health      float64 // frag.Health(LargestFree, CachedFree)
}

// Site is a call site (SiteIndex: the innermost user frame of an allocation's stack)
// whose live blocks sit in fragmented segments (segments with free space
// that a live block keeps from being released).
type Site struct {
	Frame    string // "file.py:123 function", or "(no stack recorded)"
	Blocks   int    // live blocks from this site in fragmented segments
	Live     int64  // their bytes
	Segments int    // fragmented segments they are in
	// Held is this site's share of the stranded free bytes of those
	// segments, split among each segment's live blocks by size.
	Held int64
}

func poolName(seg snapshot.Segment) string {
	if seg.PoolID != [2]int64{} {
		return fmt.Sprintf("pool %d_%d", seg.PoolID[0], seg.PoolID[1])
	}
	if seg.SegmentType == "" {
		return "unknown"
	}
	return seg.SegmentType
}

// diagnose fills the final-state fields of dev.
func diagnose(s *snapshot.Snapshot, d int, dev *Device, opts Options) {
	if dev.Capacity == 0 {
		dev.CapacitySource = "reserved"
	}
	dev.Layout = s.Layout(d, dev.Capacity)
	dev.Metrics = frag.Compute(dev.Layout)
	c := &dev.Classes
	streams, pools := map[string]*Group{}, map[string]*Group{}
	type siteAcc struct {
		Site
		segs map[uint64]bool
	}
	sites := map[string]*siteAcc{}
	names := newSiteNames()
	var wastes []SegmentWaste
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		dev.Segments++
		dev.Blocks += len(seg.Blocks)
		w := SegmentWaste{Address: seg.Address, Size: seg.TotalSize, Pool: poolName(seg), Stream: seg.Stream,
			Expandable: seg.IsExpandable}
		// live is the segment's active bytes as its blocks say (the file's
		// active_size counter is not trusted: Validate bounds it only).
		var live int64
		for _, b := range seg.Blocks {
			switch b.State {
			case snapshot.StateAllocated, snapshot.StatePendingFree:
				w.LiveBlocks++
				live += b.Size
				if b.State == snapshot.StateAllocated {
					c.Allocated += b.Size
				} else {
					c.PendingFree += b.Size
				}
				c.Active += b.Size
				c.Requested += b.RequestedSize
				if b.RequestedSize > 0 && b.RequestedSize < b.Size {
					w.InternalWaste += b.Size - b.RequestedSize
				}
			default:
				w.FreeBlocks++
				w.Free += b.Size
				w.LargestFree = max(w.LargestFree, b.Size)
			}
		}
		c.Reserved += seg.TotalSize
		c.InternalWaste += w.InternalWaste
		if w.LiveBlocks > 0 {
			w.Stranded = w.Free
			c.Stranded += w.Free
		}
		wastes = append(wastes, w)
		for _, g := range []struct {
			m   map[string]*Group
			key string
		}{{streams, fmt.Sprintf("stream %d", seg.Stream)}, {pools, w.Pool}} {
			acc := g.m[g.key]
			if acc == nil {
				acc = &Group{Name: g.key}
				g.m[g.key] = acc
			}
			acc.Segments++
			acc.Reserved += seg.TotalSize
			acc.Active += live
			acc.CachedFree += w.Free
			acc.LargestFree = max(acc.LargestFree, w.LargestFree)
		}
		if w.Stranded == 0 {
			continue
		}
		for _, b := range seg.Blocks {
			if b.State == snapshot.StateInactive {
				continue
			}
			f := names.of(b.Frames)
			acc := sites[f]
			if acc == nil {
				acc = &siteAcc{Site: Site{Frame: f}, segs: map[uint64]bool{}}
				sites[f] = acc
			}
			acc.Blocks++
			acc.Live += b.Size
			acc.segs[seg.Address] = true
			if live > 0 {
				acc.Held += int64(float64(w.Stranded) * float64(b.Size) / float64(live))
			}
		}
	}
	c.CachedFree = c.Reserved - c.Active
	c.ReservedUnallocated = c.Reserved - c.Allocated

	sort.SliceStable(wastes, func(i, j int) bool {
		if wastes[i].Waste() != wastes[j].Waste() {
			return wastes[i].Waste() > wastes[j].Waste()
		}
		return wastes[i].Address < wastes[j].Address
	})
	for _, w := range wastes {
		if len(dev.WorstSegments) == opts.TopSegments || w.Waste() == 0 {
			break
		}
		dev.WorstSegments = append(dev.WorstSegments, w)
	}
	dev.Streams = groups(streams)
	dev.Pools = groups(pools)
	for _, a := range sites {
		a.Segments = len(a.segs)
		dev.Sites = append(dev.Sites, a.Site)
	}
	sort.Slice(dev.Sites, func(i, j int) bool {
		a, b := dev.Sites[i], dev.Sites[j]
		if a.Held != b.Held {
			return a.Held > b.Held
		}
		return a.Frame < b.Frame
	})
	if len(dev.Sites) > opts.TopSites {
		dev.Sites = dev.Sites[:opts.TopSites]
	}
}

func groups(m map[string]*Group) []Group {
	out := make([]Group, 0, len(m))
	for _, g := range m {
		g.Health = frag.Health(g.LargestFree, g.CachedFree)
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
