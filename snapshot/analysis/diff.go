package analysis

import (
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
)

// Comparing snapshots: `gpufrag diff` (cmd/gpufrag/internal/cli/diff.go).
//
// A pair (before and after a change, two ranks, two hours of one server)
// is compared device by device (DiffReports): memory classes, the
// fragmentation metrics of package frag, the oom entries, the segments
// that appeared or vanished (a segment is the same one when its address
// and size are; addresses are the process's own, so across two processes
// the segment-size counts are the comparison that means something), and the
// allocation sites (attrib.go) whose held memory moved most. N snapshots of
// one job are compared by a robust rule (outlier.go).

// DiffOptions tune DiffReports. The zero value is the default.
type DiffOptions struct {
	// TopSites and TopSegments cap those lists (default 10; all are
	// counted).
	TopSites, TopSegments int
}

func (o *DiffOptions) defaults() {
	if o.TopSites <= 0 {
		o.TopSites = 10
	}
	if o.TopSegments <= 0 {
		o.TopSegments = 10
	}
}

// Diff compares two reports, device by device.
type Diff struct {
	Devices []DeviceDiff
}

// DeviceDiff compares one device of each report. A or B is nil for a
// device that only one report has.
type DeviceDiff struct {
	A, B *Device
	// Kept segments are in both (same address and size); Resized are at
	// the same address with another size (an expandable segment that
	// grew or shrank, or a segment freed and another allocated there);
	// Appeared are in B only, Vanished in A only. The lists hold the
	// largest first (Resized: the largest change), at most TopSegments
	// each; the counts and bytes are of all of them.
	Kept                         int
	Resized                      []SegmentResize
	ResizedCount                 int
	Appeared, Vanished           []SegmentRef
	AppearedCount, VanishedCount int
	AppearedBytes, VanishedBytes int64
	// Sizes are the segment sizes whose number differs, largest first.
	Sizes []SizeCount
	// Sites are the allocation sites whose held memory (allocated +
	// stranded) moved most, at most TopSites; SitesChanged counts all
	// that moved at all.
	Sites        []SiteDelta
	SitesChanged int
}

// Same reports whether d found no difference: both devices present, every
// segment kept, no allocation site moved, and the same bytes in every
// memory class.
func (d DeviceDiff) Same() bool {
	return d.A != nil && d.B != nil && d.AppearedCount == 0 && d.VanishedCount == 0 && d.ResizedCount == 0 &&
		d.SitesChanged == 0 && d.A.Classes == d.B.Classes
}

// SegmentRef is a segment that appeared or vanished.
type SegmentRef struct {
	Address uint64
	Size    int64
	Pool    string
	Live    int64 // bytes of its live blocks
}

// SegmentResize is a segment at the same address in both, of another
// size.
type SegmentResize struct {
	Address      uint64
	Pool         string
	SizeA, SizeB int64
}

// SizeCount is how many segments of one size each report has.
type SizeCount struct {
	Size int64
	A, B int
}

// SiteDelta is one allocation site in both reports (a zero SiteStat where
// it is absent).
type SiteDelta struct {
	Site string
	A, B SiteStat
}

// HeldDelta is the change in held memory, B − A.
func (s SiteDelta) HeldDelta() int64 { return s.B.Held() - s.A.Held() }

// DiffReports compares a and b. Devices are paired by number; when each
// report has exactly one device they are paired whatever their numbers
// (two ranks' snapshots each hold their own device).
func DiffReports(a, b *Report, opts DiffOptions) *Diff {
	opts.defaults()
	d := &Diff{}
	if len(a.Devices) == 1 && len(b.Devices) == 1 {
		d.Devices = append(d.Devices, DiffDevices(&a.Devices[0], &b.Devices[0], opts))
		return d
	}
	byNum := map[int]*Device{}
	for i := range b.Devices {
		byNum[b.Devices[i].Device] = &b.Devices[i]
	}
	seen := map[int]bool{}
	for i := range a.Devices {
		da := &a.Devices[i]
		seen[da.Device] = true
		d.Devices = append(d.Devices, DiffDevices(da, byNum[da.Device], opts))
	}
	for i := range b.Devices {
		if db := &b.Devices[i]; !seen[db.Device] {
			d.Devices = append(d.Devices, DiffDevices(nil, db, opts))
		}
	}
	sort.SliceStable(d.Devices, func(i, j int) bool { return d.Devices[i].device() < d.Devices[j].device() })
	return d
}

func (d DeviceDiff) device() int {
	if d.A != nil {
		return d.A.Device
	}
	return d.B.Device
}

// DiffDevices compares two devices; either may be nil.
func DiffDevices(a, b *Device, opts DiffOptions) DeviceDiff {
	opts.defaults()
	d := DeviceDiff{A: a, B: b}
	var la, lb mem.Layout
	var sa, sb map[string]SiteStat
	if a != nil {
		la, sa = a.Layout, bySite(a.Attribution)
	}
	if b != nil {
		lb, sb = b.Layout, bySite(b.Attribution)
	}
	type key struct {
		addr uint64
		size int64
	}
	inA := map[key]bool{}
	sizeA := map[uint64]int64{}
	for _, s := range la.Segments {
		inA[key{s.Addr, s.Size}] = true
		sizeA[s.Addr] = s.Size
	}
	inB := map[key]bool{}
	sizeB := map[uint64]int64{}
	sizes := map[int64]*SizeCount{}
	count := func(size int64) *SizeCount {
		if sizes[size] == nil {
			sizes[size] = &SizeCount{Size: size}
		}
		return sizes[size]
	}
	for _, s := range lb.Segments {
		k := key{s.Addr, s.Size}
		inB[k] = true
		sizeB[s.Addr] = s.Size
		count(s.Size).B++
		if inA[k] {
			d.Kept++
			continue
		}
		if was, ok := sizeA[s.Addr]; ok {
			d.ResizedCount++
			d.Resized = append(d.Resized, SegmentResize{Address: s.Addr, Pool: s.Pool, SizeA: was, SizeB: s.Size})
			continue
		}
		d.AppearedCount++
		d.AppearedBytes += s.Size
		d.Appeared = append(d.Appeared, segRef(s))
	}
	for _, s := range la.Segments {
		count(s.Size).A++
		if _, ok := sizeB[s.Addr]; ok {
			continue // kept or resized
		}
		d.VanishedCount++
		d.VanishedBytes += s.Size
		d.Vanished = append(d.Vanished, segRef(s))
	}
	sort.Slice(d.Resized, func(i, j int) bool {
		x, y := d.Resized[i], d.Resized[j]
		if cx, cy := abs(x.SizeB-x.SizeA), abs(y.SizeB-y.SizeA); cx != cy {
			return cx > cy
		}
		return x.Address < y.Address
	})
	if len(d.Resized) > opts.TopSegments {
		d.Resized = d.Resized[:opts.TopSegments]
	}
	d.Appeared = largestSegments(d.Appeared, opts.TopSegments)
	d.Vanished = largestSegments(d.Vanished, opts.TopSegments)
	for _, c := range sizes {
		if c.A != c.B {
			d.Sizes = append(d.Sizes, *c)
		}
	}
	sort.Slice(d.Sizes, func(i, j int) bool { return d.Sizes[i].Size > d.Sizes[j].Size })

	names := map[string]bool{}
	for n := range sa {
		names[n] = true
	}
	for n := range sb {
		names[n] = true
	}
	for n := range names {
		sd := SiteDelta{Site: n, A: sa[n], B: sb[n]}
		if !sd.A.sameAmounts(sd.B) {
			d.Sites = append(d.Sites, sd)
		}
	}
	d.SitesChanged = len(d.Sites)
	sort.Slice(d.Sites, func(i, j int) bool {
		x, y := d.Sites[i], d.Sites[j]
		if ax, ay := abs(x.HeldDelta()), abs(y.HeldDelta()); ax != ay {
			return ax > ay
		}
		if ax, ay := abs(x.B.Allocated-x.A.Allocated), abs(y.B.Allocated-y.A.Allocated); ax != ay {
			return ax > ay
		}
		return x.Site < y.Site
	})
	if len(d.Sites) > opts.TopSites {
		d.Sites = d.Sites[:opts.TopSites]
	}
	return d
}

func (s SiteStat) sameAmounts(o SiteStat) bool {
	return s.Blocks == o.Blocks && s.Allocated == o.Allocated && s.Requested == o.Requested &&
		s.Rounding == o.Rounding && s.Stranded == o.Stranded
}

func segRef(s mem.Segment) SegmentRef {
	r := SegmentRef{Address: s.Addr, Size: s.Size, Pool: s.Pool}
	for _, b := range s.Blocks {
		if b.State != mem.Free {
			r.Live += b.Size
		}
	}
	return r
}

// largestSegments keeps the n largest (then lowest-addressed) segments.
func largestSegments(s []SegmentRef, n int) []SegmentRef {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Size != s[j].Size {
			return s[i].Size > s[j].Size
		}
		return s[i].Address < s[j].Address
	})
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// bySite sums an attribution's stacks per row key: the call site, or the
// whole stack with full stacks. Segments are not summed (a segment shared
// by two stacks would count twice) and are left 0; Stack is kept where one
// stack reaches the key.
func bySite(a *Attribution) map[string]SiteStat {
	out := map[string]SiteStat{}
	if a == nil {
		return out
	}
	for _, s := range a.Stacks {
		k := s.Site
		if a.FullStacks {
			k = stackName(s.Stack)
		}
		r, ok := out[k]
		if !ok {
			r = SiteStat{Site: k, Stack: s.Stack}
		} else {
			r.Stack = nil
		}
		r.add(s)
		r.Segments = 0
		out[k] = r
	}
	return out
}

// stackName is a whole stack as one name: its frames, innermost first,
// joined by " < " (called from).
func stackName(frames []snapshot.Frame) string {
	if len(frames) == 0 {
		return NoStack
	}
	var b strings.Builder
	for i, f := range frames {
		if i > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(FrameString(f))
	}
	return b.String()
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
