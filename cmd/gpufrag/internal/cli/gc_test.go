package cli

import (
	"runtime/debug"
	"testing"
)

// TestEngineGC: the engine's commands set GOGC=200 and put back what was
// there; a GOGC or GOMEMLIMIT of the user's wins.
func TestEngineGC(t *testing.T) {
	cur := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := cur()
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := engineGC()
	if got := cur(); got != engineGCPercent {
		t.Errorf("GOGC during the run %d, want %d", got, engineGCPercent)
	}
	restore()
	if got := cur(); got != before {
		t.Errorf("GOGC after the run %d, want %d back", got, before)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "50")
			restore := engineGC()
			defer restore()
			if got := cur(); got != before {
				t.Errorf("with %s set, GOGC %d, want %d (the user's)", env, got, before)
			}
		})
	}
}
