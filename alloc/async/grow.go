// Async pool growth: where a request that fits no free extent goes, which
// pages it maps, and the largest request that would succeed.
// See package alloc for the overview.

package async

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/mem"
)

// A run is a maximal range of addresses that are either free and usable by
// the requesting stream or unmapped: a request placed anywhere inside one
// needs only the unmapped pages it covers mapped. Runs are what growth
// chooses between. Only runs with some unmapped space matter, because a run
// of usable memory alone is one usable extent, and best fit has already
// found that none of those holds the request.

// runAround returns the run that contains the unmapped extent u.
func (a *Allocator) runAround(uv usable, u extent.Extent) (start, end uint64) {
	start = u.Addr
	if u.Addr > a.base {
		if f, ok := uv.Find(u.Addr - 1); ok {
			start = f.Addr // a usable extent ending where u starts
		}
	}
	end = u.End()
	for {
		// The byte at end is mapped (u is coalesced): extend through a
		// usable extent starting there, then through the unmapped extent
		// after it, and so on.
		g, ok := uv.Find(end)
		if !ok {
			return start, end
		}
		end = g.End()
		v, ok := a.unmapped.Find(end)
		if !ok {
			return start, end
		}
		end = v.End()
	}
}

// runs calls f on every run in address order until f returns false.
func (a *Allocator) runs(uv usable, f func(start, end uint64) bool) {
	for at := a.base; ; {
		u, ok := a.unmapped.Next(at)
		if !ok {
			return
		}
		start, end := a.runAround(uv, u)
		if !f(start, end) {
			return
		}
		at = end
	}
}

// placement returns where growth puts a request of size bytes: the start of
// the lowest run that holds it.
func (a *Allocator) placement(uv usable, size int64) (addr uint64, ok bool) {
	a.runs(uv, func(start, end uint64) bool {
		if int64(end-start) >= size {
			addr, ok = start, true
			return false
		}
		return true
	})
	return addr, ok
}

// pagesToMap counts the unmapped pages that [addr, addr+size) touches, where
// addr is the start of a run (so no unmapped extent begins before addr and
// reaches into the range).
func (a *Allocator) pagesToMap(addr uint64, size int64) int64 {
	var pages int64
	for at, end := addr, addr+uint64(size); at < end; {
		v, ok := a.unmapped.Next(at)
		if !ok || v.Addr >= end {
			break
		}
		pages += mem.RoundUp(int64(min(v.End(), end)-v.Addr), mem.PageSize) / mem.PageSize
		at = v.End()
	}
	return pages
}

// mapRange maps the unmapped pages that [addr, addr+size) touches (see
// pagesToMap; the device must have them). A mapped page is new memory that
// no stream has used, so all of it, including any part past the request,
// becomes ready.
func (a *Allocator) mapRange(addr uint64, size int64) {
	for at, end := addr, addr+uint64(size); at < end; {
		v, ok := a.unmapped.Next(at)
		if !ok || v.Addr >= end {
			return
		}
		n := mem.RoundUp(int64(min(v.End(), end)-v.Addr), mem.PageSize)
		a.unmapped.Take(v.Addr, n)
		if !a.dev.ReservePages(n/mem.PageSize, mem.PageSize) {
			panic(fmt.Sprintf("async: mapping %s at %s without the device pages pagesToMap counted", mem.FormatBytes(n), mem.FormatAddr(v.Addr)))
		}
		a.addReady(v.Addr, n)
		a.mapped += n
		a.peakMapped = max(a.peakMapped, a.mapped)
		a.pagesMapped += n / mem.PageSize
		at = v.Addr + uint64(n)
	}
}

// MaxAllocatable is the largest request on stream 0 that Alloc would serve
// now. Alloc's first attempt serves r when r fits a usable extent, or when
// the lowest run of at least r bytes needs at most the device's free pages
// for its first r bytes; the answer is the largest such r. If the first
// attempt fails, Alloc trims every whole ready page and tries again, so the
// largest r the trimmed pool would serve counts too: it is computed on a
// trimmed clone, and only when there is a page to trim.
func (a *Allocator) MaxAllocatable() int64 {
	m := a.maxFirstAttempt()
	if a.hasWholeReadyPage() {
		c := a.clone()
		c.trimTo(0)
		m = max(m, c.maxFirstAttempt())
	}
	return m
}

func (a *Allocator) hasWholeReadyPage() bool {
	for e := range a.ready.All() {
		lo := mem.RoundUp(int64(e.Addr-a.base), mem.PageSize)
		if lo+mem.PageSize <= int64(e.End()-a.base) {
			return true
		}
	}
	return false
}

// maxFirstAttempt is the largest request stream 0 gets from best fit or one
// growth (tryAlloc), without the trim.
func (a *Allocator) maxFirstAttempt() int64 {
	uv := a.usableFor(0)
	var best int64
	best = uv.Largest()
	budget := a.dev.Free() / mem.PageSize
	// A request r > best grows into the lowest run of at least r bytes. So
	// run i serves the requests in (largest earlier run, its size] whose
	// first r bytes need at most budget pages; the page count only grows
	// with r, so the largest of them is its reach, if that clears the
	// earlier runs.
	var earlier int64
	a.runs(uv, func(start, end uint64) bool {
		size := int64(end - start)
		if r := min(size, a.reach(uv, start, end, budget)); r > earlier && r > best {
			best = r
		}
		earlier = max(earlier, size)
		return true
	})
	return best &^ (Align - 1)
}

// reach is the longest prefix of the run [start, end) that needs at most
// budget pages mapped.
func (a *Allocator) reach(uv usable, start, end uint64, budget int64) int64 {
	for at := start; at < end; {
		if v, ok := a.unmapped.Find(at); ok {
			pages := int64(v.End()-at) / mem.PageSize // unmapped extents are whole pages
			if pages > budget {
				return int64(at-start) + budget*mem.PageSize
			}
			budget -= pages
			at = v.End()
			continue
		}
		g, ok := uv.Find(at)
		if !ok {
			panic(fmt.Sprintf("async: byte %s of a run is neither usable nor unmapped", mem.FormatAddr(at)))
		}
		at = g.End()
	}
	return int64(end - start)
}
