package analysis

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"

	"github.com/gpufrag/gpufrag/snapshot"
)

// Attribution of a device's memory to the code that allocated it.
//
// Every live block (allocated, or freed and awaiting another stream) is
// charged to its stack, collapsed at its call site (frames.go) or whole
// with Options.FullStacks, with three amounts:
//
//   - Allocated: the block's size;
//   - Rounding: size − requested size, where the file records a request
//     smaller than the size (the caching allocator's rounding);
//   - Stranded: a share of its segment's free bytes. A segment that holds a
//     live block cannot be released by empty_cache, so its free bytes are
//     stranded by its live blocks; each gets a share in proportion to its
//     size, in whole bytes (the remainder goes one byte each to the blocks
//     with the largest fractional shares, the lower address first on a tie),
//     so the shares add up exactly to the segment's free bytes.
//
// The totals therefore equal the device's classes exactly: Σ Allocated ==
// Classes.Active, Σ Rounding == Classes.InternalWaste, Σ Stranded ==
// Classes.Stranded (the tests' checkAddsUp; TestAttributionShared on the real
// snapshots).

// Attribution is a device's memory by allocation site.
type Attribution struct {
	// FullStacks: Stacks hold whole stacks, and Sites one row per stack.
	FullStacks bool
	// Sites are the rows of the report: one per call site (one per whole
	// stack with FullStacks), the Options.TopSites that hold most
	// (Allocated + Stranded, then the site's name); Other sums the rest.
	Sites []SiteStat
	Other SiteStat // Site is "+N more sites"; zero when nothing is left out
	Total SiteStat // Site is "total"
	// Stacks are every distinct stack (collapsed, or whole with
	// FullStacks) with its amounts, for profiles (Profile, WriteFolded):
	// in the order of their heaviest first, then by frames.
	Stacks []SiteStat
}

// SiteStat is the memory charged to one call site or one stack.
type SiteStat struct {
	// Site is the call site's frame ("file.py:123 function") or NoStack.
	Site string
	// Stack is the stack, innermost first: collapsed (CollapseStack) or
	// whole. Nil for NoStack, and on a row of Sites when the site was
	// reached by several collapsed stacks.
	Stack     []snapshot.Frame
	Blocks    int
	Segments  int   // segments holding at least one of its blocks
	Allocated int64 // Σ sizes of its live blocks
	Requested int64 // Σ requested sizes of those blocks, where recorded
	Rounding  int64 // Σ (size − requested) where 0 < requested < size
	Stranded  int64 // its share of the free bytes of the segments it keeps
}

// Held is what the site keeps from the device: its blocks and the free
// space they strand.
func (s SiteStat) Held() int64 { return s.Allocated + s.Stranded }

func (s *SiteStat) add(o SiteStat) {
	s.Blocks += o.Blocks
	s.Segments += o.Segments
	s.Allocated += o.Allocated
	s.Requested += o.Requested
	s.Rounding += o.Rounding
	s.Stranded += o.Stranded
}

// stackKey is a stack as a map key: each frame's file and function with
// their lengths, so that no two stacks share a key whatever their names
// hold.
func stackKey(frames []snapshot.Frame) string {
	var b []byte
	for _, f := range frames {
		b = strconv.AppendInt(b, int64(len(f.Filename)), 10)
		b = append(b, ':')
		b = append(b, f.Filename...)
		b = strconv.AppendInt(b, f.Line, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(len(f.Name)), 10)
		b = append(b, ':')
		b = append(b, f.Name...)
		b = append(b, ';')
	}
	return string(b)
}

// stackInfo is what attribute needs of a block's frames: the row's stack
// and the call site; acc is the row, once attribute has found it.
type stackInfo struct {
	site  string
	stack []snapshot.Frame
	acc   *stackAcc
}

// stackAcc is a row of the attribution as attribute sums it.
type stackAcc struct {
	SiteStat
	lastSeg int // index of the last segment counted in Segments
}

// stackCache computes stackInfo once per stack (stackTable). Without it,
// collapsing and keying every block's stack anew took 83% of Analyze's
// time on 60,000 live blocks with 60-frame stacks
// (BenchmarkAnalyzeAttribution).
type stackCache struct{ t *stackTable[*stackInfo] }

func newStackCache(full bool) stackCache {
	return stackCache{newStackTable(func(frames []snapshot.Frame) *stackInfo {
		stack := frames
		if !full {
			stack = CollapseStack(frames)
		}
		return &stackInfo{site: siteOf(frames), stack: stack}
	})}
}

var noStack = &stackInfo{site: NoStack}

func (c stackCache) get(frames []snapshot.Frame) *stackInfo {
	if len(frames) == 0 {
		return noStack
	}
	return c.t.get(frames)
}

// shares splits free bytes among weights (each ≥ 0, summing to total > 0)
// in proportion, in whole bytes that add up to free exactly: the floor of
// each share, then one byte each to the largest remainders (the earlier
// index first on a tie). free ≤ total, so free·w fits 128 bits and its
// quotient by total fits 64.
func shares(free int64, weights []int64, total int64) []int64 {
	out := make([]int64, len(weights))
	rem := make([]uint64, len(weights))
	var given int64
	for i, w := range weights {
		hi, lo := bits.Mul64(uint64(free), uint64(w))
		q, r := bits.Div64(hi, lo, uint64(total))
		out[i], rem[i] = int64(q), r
		given += int64(q)
	}
	if left := free - given; left > 0 {
		order := make([]int, len(weights))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
		for _, i := range order[:left] {
			out[i]++
		}
	}
	return out
}

// attribute charges device d's live blocks in segs (d's segments only) to
// their stacks; top caps the rows (≤ 0: all).
func attribute(segs []snapshot.Segment, full bool, top int) *Attribution {
	a := &Attribution{FullStacks: full, Total: SiteStat{Site: "total"}}
	cache := newStackCache(full)
	// The rows, one per stack (collapsed unless full), found by content:
	// several stacks collapse to one.
	byStack := newStackTable[*stackAcc](nil) // find and put only: a row needs its block's site
	var noRow *stackAcc                      // the row of NoStack
	var order []*stackAcc
	rowOf := func(in *stackInfo) *stackAcc {
		if in.acc != nil {
			return in.acc
		}
		var s *stackAcc
		var h uint64
		ok := false
		if len(in.stack) == 0 {
			s, ok = noRow, noRow != nil
		} else {
			s, h, ok = byStack.find(in.stack)
		}
		if !ok {
			s = &stackAcc{SiteStat: SiteStat{Site: in.site}, lastSeg: -1}
			if len(in.stack) > 0 {
				s.Stack = append([]snapshot.Frame(nil), in.stack...)
				byStack.put(in.stack, h, s)
			} else {
				noRow = s
			}
			order = append(order, s)
		}
		if in != noStack {
			in.acc = s
		}
		return s
	}
	// Per call site, the segments holding its blocks (rows per site).
	siteSegs, siteLast := map[string]int{}, map[string]int{}
	var weights []int64
	var live []snapshot.Block
	for si, seg := range segs {
		live, weights = live[:0], weights[:0]
		var free, liveBytes int64
		for _, b := range seg.Blocks {
			if b.State == snapshot.StateInactive {
				free += b.Size
				continue
			}
			live = append(live, b)
			weights = append(weights, b.Size)
			liveBytes += b.Size
		}
		if len(live) == 0 {
			continue
		}
		a.Total.Segments++
		var stranded []int64
		if free > 0 && liveBytes > 0 {
			stranded = shares(free, weights, liveBytes)
		}
		for i, b := range live {
			in := cache.get(b.Frames)
			s := rowOf(in)
			s.Blocks++
			if s.lastSeg != si {
				s.Segments++
				s.lastSeg = si
			}
			if last, ok := siteLast[in.site]; !ok || last != si {
				siteSegs[in.site]++
				siteLast[in.site] = si
			}
			s.Allocated += b.Size
			s.Requested += b.RequestedSize
			if b.RequestedSize > 0 && b.RequestedSize < b.Size {
				s.Rounding += b.Size - b.RequestedSize
			}
			if stranded != nil {
				s.Stranded += stranded[i]
			}
		}
	}
	for _, s := range order {
		a.Stacks = append(a.Stacks, s.SiteStat)
	}
	sortStats(a.Stacks)
	rows := a.Stacks
	if !full {
		rows = siteRows(a.Stacks, siteSegs)
	}
	segments := a.Total.Segments
	for _, s := range rows {
		a.Total.add(s)
	}
	a.Total.Segments = segments
	if top > 0 && len(rows) > top {
		a.Other = SiteStat{Site: fmt.Sprintf("+%d more sites", len(rows)-top)}
		for _, s := range rows[top:] {
			a.Other.add(s)
		}
		a.Other.Segments = 0 // a sum over sites counts shared segments twice: not shown
		rows = rows[:top]
	}
	a.Sites = rows
	return a
}

// siteRows merges stacks by call site; segments[site] is the number of
// segments holding the site's blocks.
func siteRows(stacks []SiteStat, segments map[string]int) []SiteStat {
	bySite := map[string]*SiteStat{}
	var rows []*SiteStat
	for _, s := range stacks {
		r := bySite[s.Site]
		if r == nil {
			r = &SiteStat{Site: s.Site, Stack: s.Stack}
			bySite[s.Site] = r
			rows = append(rows, r)
		} else {
			r.Stack = nil // several stacks reach this site
		}
		r.add(s)
		r.Segments = segments[s.Site]
	}
	out := make([]SiteStat, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	sortStats(out)
	return out
}

// sortStats orders by Held, heaviest first, then by site and stack (each
// stack's key computed once, not per comparison, and only for rows whose
// held bytes and site tie: a key is a few KiB for a deep stack).
func sortStats(s []SiteStat) {
	type item struct {
		SiteStat
		key    string
		hasKey bool
	}
	items := make([]item, len(s))
	for i := range s {
		items[i] = item{SiteStat: s[i]}
	}
	key := func(it *item) string {
		if !it.hasKey {
			it.key, it.hasKey = stackKey(it.Stack), true
		}
		return it.key
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		if a.Held() != b.Held() {
			return a.Held() > b.Held()
		}
		if a.Site != b.Site {
			return a.Site < b.Site
		}
		return key(a) < key(b)
	})
	for i := range items {
		s[i] = items[i].SiteStat
	}
}
