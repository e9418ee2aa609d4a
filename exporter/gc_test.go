package exporter

import (
	"runtime/debug"
	"testing"
)

// TestDaemonGC: the daemon sets GOGC=DaemonGCPercent and puts back what
// was there; a GOGC or GOMEMLIMIT of the user's wins.
func TestDaemonGC(t *testing.T) {
	cur := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := cur()
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := DaemonGC()
	if got := cur(); got != DaemonGCPercent {
		t.Errorf("GOGC while serving %d, want %d", got, DaemonGCPercent)
	}
	restore()
	if got := cur(); got != before {
		t.Errorf("GOGC after %d, want %d back", got, before)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "50")
			restore := DaemonGC()
			defer restore()
			if got := cur(); got != before {
				t.Errorf("with %s set, GOGC %d, want %d (the user's)", env, got, before)
			}
		})
	}
}
