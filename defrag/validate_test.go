package defrag

import (
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// TestLayoutValidMatchesCheck checks that the planner's one-pass check
// accepts exactly the layouts mem.Layout.Check accepts: random layouts, most
// of them broken by one random mutation of a field Check looks at.
func TestLayoutValidMatchesCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var accepted, rejected int
	for round := range 3000 {
		l := mem.Layout{Capacity: mem.GiB}
		addr := mem.DefaultVABase
		for range 1 + r.IntN(4) {
			s := mem.Segment{Addr: addr, Pool: "large"}
			for range 1 + r.IntN(5) {
				b := mem.Block{Addr: addr + uint64(s.Size), Size: int64(1+r.IntN(8)) * 512}
				if r.IntN(2) == 0 {
					b.State, b.Requested = mem.Active, b.Size-int64(r.IntN(512))
				}
				s.Blocks = append(s.Blocks, b)
				s.Size += b.Size
			}
			l.Segments = append(l.Segments, s)
			addr += uint64(s.Size) + uint64(r.IntN(2))*4096
		}
		var reserved int64
		for _, s := range l.Segments {
			reserved += s.Size
		}
		l.DeviceFree = l.Capacity - reserved
		si := r.IntN(len(l.Segments))
		s := &l.Segments[si]
		b := &s.Blocks[r.IntN(len(s.Blocks))]
		switch round % 12 {
		case 0: // left valid
		case 1:
			s.Size = -s.Size
		case 2:
			s.Size += 512
		case 3:
			b.Addr += 512
		case 4:
			b.Size = 0
		case 5:
			b.Requested = b.Size + 1
		case 6:
			b.Requested = -1
		case 7:
			b.State, b.Requested = mem.Free, 7
		case 8:
			l.DeviceFree--
		case 9:
			l.OtherUse = l.DeviceFree + 1
			l.DeviceFree = -1
		case 10:
			if si > 0 {
				s.Addr = l.Segments[si-1].Addr // out of order, overlapping
			}
		case 11:
			l.Capacity += int64(r.IntN(2))
		}
		err := l.Check()
		if got := layoutValid(l); got != (err == nil) {
			t.Fatalf("round %d: layoutValid %t, Check %v:\n%s", round, got, err, l)
		}
		if cerr := checkLayout(l); (cerr == nil) != (err == nil) || (err != nil && cerr.Error() != err.Error()) {
			t.Fatalf("round %d: checkLayout %v, Check %v", round, cerr, err)
		}
		if err == nil {
			accepted++
		} else {
			rejected++
		}
	}
	if accepted < 100 || rejected < 1000 {
		t.Fatalf("the generator is off: %d accepted, %d rejected", accepted, rejected)
	}
}
