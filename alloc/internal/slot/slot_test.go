package slot

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
)

func TestTable(t *testing.T) {
	var tb Table[int]
	a := tb.Put(1)
	b := tb.Put(2)
	if *tb.Get(a) != 1 || *tb.Get(b) != 2 || tb.Len() != 2 {
		t.Fatal("get after put")
	}
	if !tb.Delete(a) || tb.Delete(a) {
		t.Fatal("delete twice must fail the second time")
	}
	c := tb.Put(3) // reuses a's slot with a new generation
	if tb.Get(a) != nil {
		t.Fatal("stale handle still resolves after its slot was reused")
	}
	if *tb.Get(c) != 3 || uint32(c) != uint32(a) {
		t.Fatalf("slot reuse: c=%x a=%x", c, a)
	}
	for _, h := range []alloc.Handle{0, 1 << 40, alloc.Handle(99)} {
		if tb.Get(h) != nil || tb.Delete(h) {
			t.Fatalf("foreign handle %x accepted", h)
		}
	}
	n := 0
	tb.Each(func(alloc.Handle, *int) { n++ })
	if n != 2 || tb.Len() != 2 {
		t.Fatalf("Each saw %d, Len %d", n, tb.Len())
	}
	cl := tb.Clone()
	cl.Delete(b)
	if tb.Get(b) == nil {
		t.Fatal("clone shares state")
	}
}

// TestTake: Take returns a live handle's value and frees its slot, as Get
// then Delete do; a stale, freed or foreign handle gets false and changes
// nothing.
func TestTake(t *testing.T) {
	var tb Table[int]
	a := tb.Put(7)
	b := tb.Put(8)
	if v, ok := tb.Take(a); !ok || v != 7 || tb.Len() != 1 || tb.Get(a) != nil {
		t.Fatalf("Take(a) = %d, %v; Len %d", v, ok, tb.Len())
	}
	for _, h := range []alloc.Handle{a, 0, 1 << 40, alloc.Handle(99)} {
		if v, ok := tb.Take(h); ok || v != 0 || tb.Len() != 1 || *tb.Get(b) != 8 {
			t.Fatalf("Take(%x) = %d, %v on a handle that is not live", h, v, ok)
		}
	}
	if c := tb.Put(9); uint32(c) != uint32(a) || *tb.Get(c) != 9 {
		t.Fatalf("the slot Take freed is not reused: %x, was %x", c, a)
	}
}
