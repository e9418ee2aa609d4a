package gcgoal

import (
	"runtime/debug"
	"testing"
)

func TestSet(t *testing.T) {
	cur := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := cur()
	t.Setenv("GPUFRAG_TEST_A", "")
	t.Setenv("GPUFRAG_TEST_B", "")
	restore := Set(before+37, "GPUFRAG_TEST_A", "GPUFRAG_TEST_B")
	if got := cur(); got != before+37 {
		t.Errorf("goal %d during, want %d", got, before+37)
	}
	restore()
	if got := cur(); got != before {
		t.Errorf("goal %d after, want %d back", got, before)
	}
	t.Setenv("GPUFRAG_TEST_B", "1")
	restore = Set(before+37, "GPUFRAG_TEST_A", "GPUFRAG_TEST_B")
	defer restore()
	if got := cur(); got != before {
		t.Errorf("with a yielded-to variable set, goal %d, want %d (untouched)", got, before)
	}
}
