package testkit

import "github.com/gpufrag/gpufrag/internal/invariants"

// SlowBuild is true where every simulation is many times slower than in
// the plain build: under -tags invariants (every allocator self-check on)
// and under the race detector, with or without -tags noinvariants (CI's
// race step). Heavy tests that start no goroutine of their own skip there,
// since the plain `go test ./...` runs them; before this constant they
// tested invariants.Enabled, which CI's race step turns off, so the
// fidelity page alone ran for 123 s under -race on CI (issue 27's CI
// budget).
const SlowBuild = invariants.Enabled || Race
