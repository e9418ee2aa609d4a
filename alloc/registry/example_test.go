package registry_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// The README's library example.
func ExampleNew() {
	dev := mem.MustDevice(80*mem.GiB, 16*mem.GiB) // capacity, weights + CUDA context
	a, err := registry.New("caching:expandable_segments:True", dev)
	if err != nil {
		panic(err)
	}
	b, err := a.Alloc(3*mem.MiB, 0) // *alloc.OOMError when it cannot
	if err != nil {
		panic(err)
	}
	m := frag.Compute(a.Layout())
	fmt.Printf("reserved %s, allocated %s, health %.2f\n",
		mem.FormatBytes(m.Reserved), mem.FormatBytes(m.Allocated), m.Health)
	_ = a.Free(b.Handle)
	// Output: reserved 20MiB, allocated 3MiB, health 1.00
}
