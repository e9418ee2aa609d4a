package direct

import (
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// TestLongRunReusesAddressSpace: allocations of a whole 1 PiB device take
// 2^50 bytes of virtual space each, so the 64-bit space holds 2^14 of
// them; a longer run of allocations and frees goes on with the ranges
// given back.
func TestLongRunReusesAddressSpace(t *testing.T) {
	dev := mem.MustDevice(mem.MaxCapacity, 0)
	a, err := New(dev, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 << 14 {
		b, err := a.Alloc(mem.MaxCapacity, 0)
		if err != nil {
			t.Fatalf("allocation %d failed: %v", i, err)
		}
		if err := a.Free(b.Handle); err != nil {
			t.Fatal(err)
		}
	}
	if dev.ReusedVA() == 0 {
		t.Fatal("the fresh address space never ran out: the test means nothing")
	}
}
