package pyrand

import "testing"

// TestNpRandint: NumPy's legacy randint stays in [low, high) and spends
// exactly one 32-bit draw a value when the width is a power of two (the
// mask then keeps every draw), and more than one on average otherwise
// (1,000 values under a mask of 1,023 reject 2.3% of draws). That the
// stream is NumPy's own is pinned by runs whose redrawn lengths add up to
// the totals their clients printed: the SGLang cookbook's six (calib's
// TestSGLCookbookFigures, 12 sums of 10 to 500 draws) and datacrunch's
// five (workload's TestBenchSGLangClientDraws, 10 sums of 300 to 3,200).
func TestNpRandint(t *testing.T) {
	var a, b MT
	a.InitGenrand(1)
	b.InitGenrand(1)
	for range 1000 {
		if v := a.NPRandint(3, 11); v < 3 || v > 10 || uint32(v-3) != b.Uint32()&7 {
			t.Fatalf("randint(3, 11) gave %d, not the next draw's low 3 bits plus 3", v)
		}
		if v := a.NPRandint(5, 6); v != 5 { // a width of 1 draws nothing
			t.Fatalf("randint(5, 6) gave %d", v)
		}
	}
	var m MT
	m.InitGenrand(1)
	draws := 0
	for range 10000 {
		before := m.i
		if v := m.NPRandint(1, 1001); v < 1 || v > 1000 {
			t.Fatalf("randint(1, 1001) gave %d", v)
		}
		draws += (m.i - before + 624) % 624
	}
	if draws <= 10000 || draws > 10400 {
		t.Errorf("10,000 values of width 1,000 took %d draws, want a little over 10,000 (1,023/1,000 expected)", draws)
	}
}
