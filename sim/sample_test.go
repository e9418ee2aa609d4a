package sim

import (
	"testing"

	"github.com/gpufrag/gpufrag/kv/strategy"
)

// TestKVAcc checks the KV breakdown accumulator: sums per field over
// samples, External only where it counts, and the shares of Result.
func TestKVAcc(t *testing.T) {
	var a kvAcc
	if got := a.shares(); got != (Shares{}) {
		t.Fatalf("shares of no sample: %+v, want zeros", got)
	}
	u := strategy.Breakdown{TokenStates: 60, Reservation: 20, Internal: 10, External: 10, CachedIdle: 30, Free: 70}
	a.add(u, true)
	a.add(u, false) // External does not count for this sample
	want := kvAcc{tokenStates: 120, reservation: 40, internal: 20, external: 10, cachedIdle: 60, footprint: 2 * 190}
	if a != want {
		t.Fatalf("after two samples: %+v, want %+v", a, want)
	}
	got := a.shares()
	wantShares := Shares{TokenStates: 120.0 / 190, Reservation: 40.0 / 190, Internal: 20.0 / 190, External: 10.0 / 190,
		CachedIdle: 60.0 / 380}
	if got != wantShares {
		t.Fatalf("shares %+v, want %+v", got, wantShares)
	}
}
