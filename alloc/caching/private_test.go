package caching_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

var graphPool = caching.PoolID{1, 0} // CUDA-graph pools count (n, 0); MemPools (0, n)

func newPrivate(t *testing.T, capacity int64, cfg caching.Config) *caching.Allocator {
	t.Helper()
	a, err := caching.New(mem.MustDevice(capacity, 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustAllocIn(t *testing.T, a *caching.Allocator, id caching.PoolID, size int64) alloc.Block {
	t.Helper()
	b, err := a.AllocIn(id, size, 0)
	if err != nil {
		t.Fatalf("AllocIn(%v, %d): %v", id, size, err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatalf("after AllocIn(%v, %d): %v", id, size, err)
	}
	return b
}

func mustFree(t *testing.T, a *caching.Allocator, h alloc.Handle) {
	t.Helper()
	if err := a.Free(h); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A private pool's cached blocks serve only its own requests, and the
// default pools' only theirs (get_pool routes by the capture underway).
func TestPrivatePoolRouting(t *testing.T) {
	for _, small := range []bool{false, true} {
		size := 4 * mem.MiB // large pool: a 20 MiB segment, split
		if small {
			size = 4096 // small pool: a 2 MiB segment, split
		}
		a := newPrivate(t, 1*mem.GiB, caching.Config{})
		g := mustAllocIn(t, a, graphPool, size)
		mustFree(t, a, g.Handle)
		d := mustAllocIn(t, a, caching.PoolID{}, size)
		if d.Addr == g.Addr {
			t.Errorf("small=%v: a default-pool request took the private pool's cached block at %#x", small, g.Addr)
		}
		if st := a.Stats(); st.Segments != 2 {
			t.Errorf("small=%v: %d segments, want one per pool", small, st.Segments)
		}
		g2 := mustAllocIn(t, a, graphPool, size)
		if g2.Addr != g.Addr {
			t.Errorf("small=%v: the private pool's second request went to %#x, want its cached block at %#x", small, g2.Addr, g.Addr)
		}
		mustFree(t, a, d.Handle)
		other := mustAllocIn(t, a, caching.PoolID{0, 1}, size) // a MemPool: neither pool's block
		if other.Addr == g.Addr || other.Addr == d.Addr {
			t.Errorf("small=%v: MemPool request reused another pool's block at %#x", small, other.Addr)
		}
		if st := a.Stats(); st.Segments != 3 {
			t.Errorf("small=%v: %d segments, want 3", small, st.Segments)
		}
	}
}

// empty_cache leaves a pool that captures still use alone; once released
// (no users), its wholly free segments go back and the pool is deleted.
func TestPrivatePoolRelease(t *testing.T) {
	a := newPrivate(t, 1*mem.GiB, caching.Config{})
	g := mustAllocIn(t, a, graphPool, 30*mem.MiB)
	live := mustAllocIn(t, a, graphPool, 2*mem.MiB) // a 20 MiB segment kept split by a live block
	mustFree(t, a, g.Handle)
	if err := a.RetainPool(graphPool); err != nil { // a second graph shares the pool
		t.Fatal(err)
	}
	a.EmptyCache()
	if st := a.Stats(); st.Reserved != 50*mem.MiB {
		t.Fatalf("empty_cache with the pool in use: reserved %d, want 50 MiB kept", st.Reserved)
	}
	if got := a.PrivateCachedFree(); got != 48*mem.MiB {
		t.Errorf("PrivateCachedFree = %d, want the 30 MiB segment and the 18 MiB tail", got)
	}
	for range 2 {
		if err := a.ReleasePool(graphPool); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.ReleasePool(graphPool); err == nil {
		t.Error("releasing a pool with no users: no error")
	}
	if _, err := a.AllocIn(graphPool, 512, 0); err == nil {
		t.Error("allocating into a released pool: no error")
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	a.EmptyCache()
	if st := a.Stats(); st.Reserved != 20*mem.MiB || st.Segments != 1 {
		t.Fatalf("empty_cache of a freeable pool: reserved %d in %d segments, want the split 20 MiB segment only", st.Reserved, st.Segments)
	}
	if pp := a.PrivatePools(); len(pp) != 1 || pp[0].Users != 0 || pp[0].Segments != 1 || pp[0].Reserved != 20*mem.MiB {
		t.Fatalf("PrivatePools = %+v, want the released pool with its one split segment", pp)
	}
	mustFree(t, a, live.Handle)
	a.EmptyCache()
	if st := a.Stats(); st.Reserved != 0 {
		t.Fatalf("reserved %d after the last block was freed and the cache emptied", st.Reserved)
	}
	if pp := a.PrivatePools(); len(pp) != 0 {
		t.Fatalf("PrivatePools = %+v, want the emptied pool deleted", pp)
	}
	// The id names no pool any more: a new capture with it starts afresh.
	mustAllocIn(t, a, graphPool, 512)
	if pp := a.PrivatePools(); len(pp) != 1 || pp[0].Users != 1 {
		t.Fatalf("PrivatePools = %+v, want a new pool with one user", pp)
	}
}

// While a capture is underway PyTorch's ladder does not empty the caches:
// a private-pool request fails where a default-pool one would release the
// default pool's cached segment and succeed.
func TestPrivatePoolOOMLadder(t *testing.T) {
	a := newPrivate(t, 40*mem.MiB, caching.Config{})
	b := mustAllocIn(t, a, caching.PoolID{}, 24*mem.MiB) // a 24 MiB segment, cached once freed
	mustFree(t, a, b.Handle)
	_, err := a.AllocIn(graphPool, 30*mem.MiB, 0)
	var oom *alloc.OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("private-pool request with the device full of default-pool cache: err %v, want out of memory", err)
	}
	if st := a.Stats(); st.Reserved != 24*mem.MiB {
		t.Fatalf("the failed private request released the default cache: reserved %d", st.Reserved)
	}
	if _, err := a.Alloc(30*mem.MiB, 0); err != nil {
		t.Fatalf("default-pool request: %v (the ladder should release the cached segment)", err)
	}
}

// Seeded private segments belong to their pool; the indexes and Clone see
// every pool.
func TestPrivatePoolSeedAndViews(t *testing.T) {
	a := newPrivate(t, 1*mem.GiB, caching.Config{})
	hs, err := a.Seed([]caching.SeedSegment{
		{Addr: segA, Size: 20 * mem.MiB, Pool: graphPool, Live: []caching.SeedBlock{{Addr: segA, Size: 2 * mem.MiB, Requested: 2 * mem.MiB}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if got := a.LargestFreeBlock(); got != 18*mem.MiB {
		t.Errorf("LargestFreeBlock = %d, want the private pool's 18 MiB", got)
	}
	if got := a.LargestFreeIn(false, 0); got != 0 {
		t.Errorf("LargestFreeIn(large, 0) = %d, want 0: the default large pool has nothing", got)
	}
	c := a.Clone().(*caching.Allocator)
	d := mustAllocIn(t, a, caching.PoolID{}, 4*mem.MiB)
	if d.Addr >= segA && d.Addr < segA+uint64(20*mem.MiB) {
		t.Errorf("default request placed at %#x, inside the seeded private segment", d.Addr)
	}
	g := mustAllocIn(t, c, graphPool, 4*mem.MiB)
	if g.Addr != segA+uint64(2*mem.MiB) {
		t.Errorf("clone's private request at %#x, want %#x after the seeded block", g.Addr, segA+uint64(2*mem.MiB))
	}
	l := a.Layout()
	if got, want := a.LargestFreeBlock(), frag.LargestFreeBlock(l); got != want {
		t.Errorf("LargestFreeBlock = %d, Layout says %d", got, want)
	}
	pools := map[string]bool{}
	for _, s := range l.Segments {
		pools[s.Pool] = true
	}
	if !pools["pool 1_0 large"] || !pools["large"] {
		t.Errorf("Layout pools %v, want the private one named apart", pools)
	}
	if a.ReleaseSegment(segA) {
		t.Error("released the seeded segment while a block in it is live")
	}
	mustFree(t, a, hs[0])
	if !a.ReleaseSegment(segA) {
		t.Error("the wholly free seeded segment was not released")
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if pp := a.PrivatePools(); len(pp) != 1 || pp[0].Segments != 0 || pp[0].Users != 1 {
		t.Errorf("PrivatePools = %+v, want the pool kept (in use) with no segment", pp)
	}
}

// FuzzPrivatePools runs random calls over the default pools and three
// private pools (AllocIn, Free, EmptyCache, RetainPool, ReleasePool) on a
// small device, with and without expandable segments and a finite
// max_split_size: the invariants hold after every call, and every live
// block lies in a segment of the pool its request was routed to.
//
//	go test ./alloc/caching -run '^$' -fuzz FuzzPrivatePools -fuzztime 20s
func FuzzPrivatePools(f *testing.F) {
	f.Add([]byte{0, 0, 1, 40, 0, 2, 40, 1, 0, 2, 0, 1, 40, 4, 1, 2})
	f.Add([]byte{1, 0, 1, 200, 0, 0, 3, 1, 0, 5, 9, 4, 1, 4, 1, 2, 0, 1, 9})
	f.Add([]byte{2, 0, 2, 255, 0, 2, 255, 0, 2, 255, 2, 3, 2, 4, 2, 4, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 512 {
			return
		}
		cfgs := []caching.Config{{}, {ExpandableSegments: true}, {MaxSplitSize: 40 * mem.MiB}}
		a, err := caching.New(mem.MustDevice(256*mem.MiB, 0), cfgs[int(data[0])%len(cfgs)])
		if err != nil {
			t.Fatal(err)
		}
		pools := []caching.PoolID{{}, {1, 0}, {2, 0}, {0, 1}}
		type liveBlock struct {
			h    alloc.Handle
			addr uint64
			pool caching.PoolID
		}
		var live []liveBlock
		for i := 1; i+2 < len(data); i += 3 {
			op, arg, n := data[i]%6, data[i+1], int64(data[i+2])
			id := pools[int(arg)%len(pools)]
			switch op {
			case 0, 5: // requests from 512 B to about 64 MiB, small and large pools
				size := n*n*1024 + 1
				if op == 5 {
					id = caching.PoolID{}
				}
				b, err := a.AllocIn(id, size, int(arg>>6)%2)
				if err == nil {
					live = append(live, liveBlock{b.Handle, b.Addr, id})
				}
			case 1:
				if len(live) > 0 {
					k := int(n) % len(live)
					if err := a.Free(live[k].h); err != nil {
						t.Fatal(err)
					}
					live = append(live[:k], live[k+1:]...)
				}
			case 2:
				a.EmptyCache()
			case 3:
				_ = a.RetainPool(id) // an error (default or released pool) changes nothing
			case 4:
				_ = a.ReleasePool(id)
			}
			if err := a.CheckInvariants(); err != nil {
				t.Fatalf("after op %d (%d, %d, %d): %v", i/3, op, arg, n, err)
			}
		}
		l := a.Layout()
		where := map[uint64]string{} // live block address → its segment's pool name
		for _, s := range l.Segments {
			for _, b := range s.Blocks {
				if b.State != mem.Free {
					where[b.Addr] = s.Pool
				}
			}
		}
		for _, lb := range live {
			got := where[lb.addr]
			private := strings.HasPrefix(got, "pool ")
			if private != (lb.pool != caching.PoolID{}) ||
				(private && !strings.HasPrefix(got, fmt.Sprintf("pool %d_%d ", lb.pool[0], lb.pool[1]))) {
				t.Fatalf("block at %#x routed to %v lies in a %q segment", lb.addr, lb.pool, got)
			}
		}
	})
}
