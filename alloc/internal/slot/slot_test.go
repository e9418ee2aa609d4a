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
