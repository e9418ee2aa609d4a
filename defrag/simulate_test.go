package defrag

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// shadowLayout: segment 0 at 100 (blocks a@100 live 10, free 10, b@120
// live 10), segment 1 at 0 (free 30), segment 2 at 200 (c@200 live 20):
// segments out of address order, with a gap between 130 and 200.
func shadowLayout() mem.Layout {
	live := func(addr uint64, size int64) mem.Block {
		return mem.Block{Addr: addr, Size: size, State: mem.Active, Requested: size}
	}
	return mem.Layout{Segments: []mem.Segment{
		{Addr: 100, Size: 30, Blocks: []mem.Block{live(100, 10), {Addr: 110, Size: 10}, live(120, 10)}},
		{Addr: 0, Size: 30, Blocks: []mem.Block{{Addr: 0, Size: 30}}},
		{Addr: 200, Size: 20, Blocks: []mem.Block{live(200, 20)}},
	}}
}

func TestSegIndex(t *testing.T) {
	l := shadowLayout()
	x := newSegIndex(l, sortedSegs(l))
	for addr, want := range map[uint64]int32{0: 1, 29: 1, 30: -1, 99: -1, 100: 0, 129: 0, 130: -1, 219: 2, 220: -1, 1 << 40: -1} {
		if got := x.at(addr); got != want {
			t.Errorf("at(%d) = %d, want %d", addr, got, want)
		}
	}
	bs := l.Segments[0].Blocks
	for addr, want := range map[uint64]int{100: 0, 110: 1, 120: 2, 105: -1, 0: -1, 130: -1} {
		if got := blockAt(bs, addr); got != want {
			t.Errorf("blockAt(%d) = %d, want %d", addr, got, want)
		}
	}
}

// TestShadowMove: a block moved twice is found at its new place (where
// no original block starts: an original there is the block that moves); the
// planner's note of a block's index is checked before it is used; a move
// from no live block, of the wrong size or out of the segments is refused.
func TestShadowMove(t *testing.T) {
	l := shadowLayout()
	sh := newShadow(l, 4)
	if err := sh.move(0, Move{From: 100, To: 5, Size: 10}, 0, 1, 2); err != nil { // a wrong note: index 2 is b
		t.Fatal(err)
	}
	if err := sh.move(1, Move{From: 5, To: 15, Size: 10}, 1, 1, -1); err != nil { // a again, from its arrival (no block starts at 5)
		t.Fatal(err)
	}
	if !sh.gone[0] || sh.gone[2] || !sh.touched[0] || !sh.touched[1] || sh.touched[2] {
		t.Errorf("gone %v, touched %v", sh.gone, sh.touched)
	}
	want := []arrival{{-1, mem.Block{Addr: 5, Size: 10, State: mem.Active, Requested: 10}}, {1, mem.Block{Addr: 15, Size: 10, State: mem.Active, Requested: 10}}}
	if !reflect.DeepEqual(sh.arr, want) {
		t.Errorf("arrivals %+v, want %+v", sh.arr, want)
	}
	for _, c := range []struct {
		mv       Move
		from, to int32
		want     string
	}{
		{Move{From: 100, To: 0, Size: 10}, 0, 1, "no live block at the source"}, // a left already
		{Move{From: 105, To: 0, Size: 10}, 0, 1, "no live block at the source"}, // inside a block
		{Move{From: 120, To: 0, Size: 20}, 0, 1, "the block at the source is"},  // b is 10 bytes
		{Move{From: 110, To: 0, Size: 10}, 0, 1, "the block at the source is"},  // a free block
		{Move{From: 150, To: 0, Size: 10}, -1, 1, "leaves the segments"},
	} {
		if err := sh.move(7, c.mv, c.from, c.to, -1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.mv, err, c.want)
		}
	}
}

// TestShadowBySegment: the arrivals still in place, grouped by segment in
// address order.
func TestShadowBySegment(t *testing.T) {
	sh := newShadow(shadowLayout(), 4)
	blk := func(addr uint64) mem.Block { return mem.Block{Addr: addr, Size: 1, State: mem.Active} }
	sh.arr = []arrival{{2, blk(215)}, {1, blk(20)}, {-1, blk(5)}, {1, blk(3)}, {2, blk(205)}}
	arr, count := sh.bySegment()
	if want := []int{0, 0, 2, 4}; !reflect.DeepEqual(count, want) {
		t.Errorf("count %v, want %v", count, want)
	}
	var addrs []uint64
	for _, a := range arr {
		addrs = append(addrs, a.b.Addr)
	}
	if want := []uint64{3, 20, 205, 215}; !reflect.DeepEqual(addrs, want) {
		t.Errorf("arrivals at %v, want %v", addrs, want)
	}
}

// TestRetile: a segment's staying live blocks and arrivals, merged in
// address order with one free block per gap; overlapping blocks and
// blocks past the segment's end are refused.
func TestRetile(t *testing.T) {
	l := shadowLayout()
	sh := newShadow(l, 2)
	sh.gone[0] = true // a (100) left segment 0
	arr := []arrival{{0, mem.Block{Addr: 104, Size: 4, State: mem.Active}}}
	got, err := sh.retile([]mem.Block{{Addr: 1}}, 0, arr)
	want := []mem.Block{{Addr: 1}, {Addr: 100, Size: 4}, arr[0].b, {Addr: 108, Size: 12}, l.Segments[0].Blocks[2]}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("retile: %+v, %v; want %+v", got, err, want)
	}
	if got, err := sh.retile(nil, 1, nil); err != nil || !reflect.DeepEqual(got, []mem.Block{{Addr: 0, Size: 30}}) {
		t.Errorf("an empty segment: %+v, %v", got, err)
	}
	if bound := sh.retiledBlocks([]int{0, 1, 1, 1}); bound != 0 {
		t.Errorf("nothing touched: bound %d", bound)
	}
	sh.touched[0] = true
	if bound := sh.retiledBlocks([]int{0, 1, 1, 1}); bound < len(want)-1 {
		t.Errorf("bound %d below the %d blocks retiled", bound, len(want)-1)
	}
	for _, b := range []mem.Block{{Addr: 118, Size: 4, State: mem.Active}, {Addr: 128, Size: 4, State: mem.Active}} {
		if _, err := sh.retile(nil, 0, []arrival{{0, b}}); err == nil || !strings.Contains(err.Error(), "overlap or leave segment") {
			t.Errorf("arrival %+v: %v", b, err)
		}
	}
}
