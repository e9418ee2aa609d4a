package vmm

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// TestLongRunReusesAddressSpace: every allocation reserves MaxRange bytes of
// virtual space, so at the largest MaxRange (128 TiB) the 64-bit space
// holds 2^17 of them. A long run of allocations and frees, with a few
// ranges held across many others, must go on once the fresh space is used
// up, on the ranges given back, and never fail for want of addresses.
func TestLongRunReusesAddressSpace(t *testing.T) {
	dev := mem.MustDevice(mem.GiB, 0)
	a, err := New(dev, Config{Page: DefaultPage, MaxRange: MaxMaxRange})
	if err != nil {
		t.Fatal(err)
	}
	var held []alloc.Block
	const n = 3 << 17
	for i := range n {
		b, err := a.Alloc(int64(1+i%3)*mem.MiB, 0)
		if err != nil {
			t.Fatalf("allocation %d of %d failed: %v", i, n, err)
		}
		if i%10_000 == 0 {
			held = append(held, b)
			if len(held) > 4 {
				if err := a.Free(held[0].Handle); err != nil {
					t.Fatal(err)
				}
				held = held[1:]
			}
			continue
		}
		if err := a.Free(b.Handle); err != nil {
			t.Fatal(err)
		}
	}
	if dev.ReusedVA() == 0 {
		t.Fatal("the fresh address space never ran out: the test means nothing")
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.OOMs != 0 || st.LiveBlocks != len(held) {
		t.Fatalf("%d OOMs, %d live blocks", st.OOMs, st.LiveBlocks)
	}
}
