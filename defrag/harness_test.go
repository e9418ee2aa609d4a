package defrag_test

import (
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// unit is the granularity of the modelled device memory: every block of the
// caching allocator, the arena and the size classes starts and ends on a
// multiple of 512 bytes, so each 512-byte unit holds one 64-bit word of
// content here. A move that lands on, or fails to carry, any unit of a live
// block changes that block's checksum, exactly as with full bytes, at 1/64 of
// the memory and time.
const unit = 512

// pageUnits is the number of units per page of the sparse memory model.
const pageUnits = 512

// world is the byte-backed test mode: an allocator, an owner that knows the
// handle and address of every live block (as the simulator does), and a
// sparse model of device memory in which every live block holds a
// deterministic pattern. Moves copy the content (with memmove semantics), so
// a plan that overwrites another live block or loses one is caught by the
// checksums, not only by the allocator's bookkeeping.
type world struct {
	a    alloc.Allocator
	ix   *defrag.Index
	live map[alloc.Handle]alloctest.Live
	sum  map[alloc.Handle]uint64 // checksum of the block's content when written
	mem  map[uint64]*[pageUnits]uint64
	seq  uint64
}

func newWorld(allocSpec string, capacity int64) (*world, error) {
	dev, err := mem.NewDevice(capacity, 0)
	if err != nil {
		return nil, err
	}
	a, err := registry.New(allocSpec, dev)
	if err != nil {
		return nil, err
	}
	return &world{a: a, ix: defrag.NewIndex(), live: map[alloc.Handle]alloctest.Live{},
		sum: map[alloc.Handle]uint64{}, mem: map[uint64]*[pageUnits]uint64{}}, nil
}

// rw reads (write=false) or writes buf, one word per unit, at addr.
func (w *world) rw(addr uint64, buf []uint64, write bool) {
	if addr%unit != 0 {
		panic(fmt.Sprintf("unaligned block at %#x", addr))
	}
	u := addr / unit
	for len(buf) > 0 {
		pg, off := u/pageUnits, u%pageUnits
		p := w.mem[pg]
		if p == nil {
			p = new([pageUnits]uint64)
			w.mem[pg] = p
		}
		n := min(uint64(len(buf)), pageUnits-off)
		if write {
			copy(p[off:off+n], buf[:n])
		} else {
			copy(buf[:n], p[off:off+n])
		}
		buf, u = buf[n:], u+n
	}
}

func words(size int64) int { return int((size + unit - 1) / unit) }

// sum64 is FNV-1a over the words.
func sum64(buf []uint64) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range buf {
		h ^= x
		h *= 1099511628211
	}
	return h
}

func (w *world) checksum(addr uint64, size int64) uint64 {
	buf := make([]uint64, words(size))
	w.rw(addr, buf, false)
	return sum64(buf)
}

// alloc allocates and fills the block with a pattern unique to this
// allocation (xorshift words seeded by a counter).
func (w *world) alloc(size int64, stream int) (alloc.Block, error) {
	b, err := w.a.Alloc(size, stream)
	if err != nil {
		return b, err
	}
	w.seq++
	buf := make([]uint64, words(b.Size))
	x := w.seq * 0x9e3779b97f4a7c15
	for i := range buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf[i] = x
	}
	w.rw(b.Addr, buf, true)
	w.sum[b.Handle] = sum64(buf)
	w.live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: size}
	w.ix.Add(b.Handle, b.Addr)
	return b, nil
}

func (w *world) free(h alloc.Handle) error {
	if err := w.a.Free(h); err != nil {
		return err
	}
	delete(w.live, h)
	delete(w.sum, h)
	w.ix.Remove(h)
	return nil
}

// handles returns the live handles in a deterministic order.
func (w *world) handles() []alloc.Handle {
	hs := make([]alloc.Handle, 0, len(w.live))
	for h := range w.live {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// apply performs p through the allocator, moving the bytes of each block as
// the copy kernel would, and updating the owner's records.
func (w *world) apply(p defrag.Plan) error {
	return defrag.Apply(w.a.(alloc.Relocator), p, w.ix.HandleAt, func(h alloc.Handle, b alloc.Block) {
		old := w.live[h]
		buf := make([]uint64, words(old.Size))
		w.rw(old.Addr, buf, false)
		w.rw(b.Addr, buf, true) // memmove: the whole source was read first
		old.Addr = b.Addr
		w.live[h] = old
		w.ix.Moved(h, b)
	})
}

// check verifies that nothing is lost: the allocator agrees with the owner
// on every live block (alloctest.Check: addresses, sizes, no overlap, stats),
// every live block's bytes have the checksum they were written with, and the
// owner's address book points at the allocator's addresses.
func (w *world) check() error {
	if err := alloctest.Check(w.a, w.live); err != nil {
		return err
	}
	for _, h := range w.handles() {
		l := w.live[h]
		if got := w.checksum(l.Addr, l.Size); got != w.sum[h] {
			return fmt.Errorf("block %#x at %s: checksum %#x, written %#x", uint64(h), mem.FormatAddr(l.Addr), got, w.sum[h])
		}
		if a, ok := w.ix.Addr(h); !ok || a != l.Addr {
			return fmt.Errorf("block %#x: the owner says %s, the block is at %s", uint64(h), mem.FormatAddr(a), mem.FormatAddr(l.Addr))
		}
		if h2, ok := w.ix.HandleAt(l.Addr); !ok || h2 != h {
			return fmt.Errorf("block %#x: the owner's address book has a stale entry at %s", uint64(h), mem.FormatAddr(l.Addr))
		}
	}
	if w.ix.Len() != len(w.live) {
		return fmt.Errorf("the owner indexes %d blocks, %d are live", w.ix.Len(), len(w.live))
	}
	return nil
}

// sameLayout compares the plan's simulated layout with the allocator's real
// one after Apply: every segment and block, and every frag metric except
// max_allocatable, which the planner can only estimate.
func sameLayout(planned, real mem.Layout) error {
	planned.Sort()
	real.Sort()
	if len(planned.Segments) != len(real.Segments) {
		return fmt.Errorf("planned %d segments, real %d", len(planned.Segments), len(real.Segments))
	}
	for i := range planned.Segments {
		ps, rs := planned.Segments[i], real.Segments[i]
		if ps.Addr != rs.Addr || ps.Size != rs.Size || ps.Pool != rs.Pool || ps.Stream != rs.Stream || !slices.Equal(ps.Blocks, rs.Blocks) {
			return fmt.Errorf("segment %d differs:\nplanned %+v\nreal    %+v", i, ps, rs)
		}
	}
	pm, rm := frag.Compute(planned), frag.Compute(real)
	pm.MaxAllocatable, rm.MaxAllocatable = 0, 0
	if pm != rm {
		return fmt.Errorf("metrics differ:\nplanned %+v\nreal    %+v", pm, rm)
	}
	return nil
}
