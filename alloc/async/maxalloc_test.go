package async

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// TestMaxAllocatableIsTheMaximum complements alloctest's check (a clone
// serves MaxAllocatable on stream 0) with the other half of "exact": no
// larger request is served. Alloc's success is not monotone in the size (a
// smaller request may pick a lower run that needs more pages), so rather
// than probing just above the answer it tries, on fresh clones, every size
// above it that could matter: one granule more, every multiple of a page,
// the sizes of the free extents and runs (and one granule more), and every
// request that would end a run's growth at a page boundary, both now and
// after the trim Alloc does before its retry.
func TestMaxAllocatableIsTheMaximum(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.Int64Range(8, 48).Draw(rt, "capacity_2mib") * mem.PageSize
		other := rapid.Int64Range(0, capacity/mem.PageSize/4).Draw(rt, "other_2mib") * mem.PageSize
		threshold := rapid.SampledFrom([]int64{0, 4 * mem.MiB, NoRelease}).Draw(rt, "threshold")
		a, err := New(mem.MustDevice(capacity, other), Config{ReleaseThreshold: threshold})
		if err != nil {
			rt.Fatal(err)
		}
		var live []alloc.Handle
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0, 1:
				size := rapid.Int64Range(1, 12).Draw(rt, "size_mib") * mem.MiB / int64(rapid.SampledFrom([]int{1, 2, 3}).Draw(rt, "div"))
				if b, err := a.Alloc(size, rapid.IntRange(0, 1).Draw(rt, "stream")); err == nil {
					live = append(live, b.Handle)
				}
			case 2:
				if len(live) > 0 {
					i := rapid.IntRange(0, len(live)-1).Draw(rt, "victim")
					_ = a.Free(live[i])
					live = append(live[:i], live[i+1:]...)
				}
			case 3:
				a.Sync()
			case 4:
				a.EmptyCache()
			}
		}
		m := a.MaxAllocatable()
		if m > 0 {
			if _, err := a.Clone().Alloc(m, 0); err != nil {
				rt.Fatalf("MaxAllocatable %d fails: %v\n%s", m, err, a.Layout())
			}
		}
		cands := []int64{m + Align}
		for p := mem.RoundUp(m+1, mem.PageSize); p <= capacity; p += mem.PageSize {
			cands = append(cands, p)
		}
		// The free extents and runs, as they are and after the implicit trim.
		trimmed := a.clone()
		trimmed.trimTo(0)
		for _, p := range []*Allocator{a, trimmed} {
			for e := range p.usableFor(0).All() {
				cands = append(cands, e.Size, e.Size+Align)
			}
			p.runs(p.usableFor(0), func(start, end uint64) bool {
				cands = append(cands, int64(end-start), int64(end-start)+Align)
				// Growth that runs out of pages stops at a page boundary.
				for q := mem.RoundUp(int64(start-p.base)+1, mem.PageSize); q <= int64(end-p.base); q += mem.PageSize {
					cands = append(cands, q-int64(start-p.base))
				}
				return true
			})
		}
		for _, r := range cands {
			if r <= m {
				continue
			}
			if b, err := a.Clone().Alloc(r, 0); err == nil {
				rt.Fatalf("MaxAllocatable %s but %s succeeds (at %s)\n%s", mem.FormatBytes(m), mem.FormatBytes(r),
					mem.FormatAddr(b.Addr), a.Layout())
			}
		}
	})
}
