package exporter

import (
	"runtime/debug"
	"testing"
)

// TestDaemonGC: the daemon sets GOGC=DaemonGCPercent and puts back what
// was there; a GOGC of the user's wins, a GOMEMLIMIT does not.
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
	t.Run("GOGC", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		restore := DaemonGC()
		defer restore()
		if got := cur(); got != before {
			t.Errorf("with GOGC set, GOGC %d, want %d (the user's)", got, before)
		}
	})
	t.Run("GOMEMLIMIT", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "448MiB")
		restore := DaemonGC()
		defer restore()
		if got := cur(); got != DaemonGCPercent {
			t.Errorf("with GOMEMLIMIT set, GOGC %d, want %d (the limit bounds the heap either way)", got, DaemonGCPercent)
		}
	})
}
