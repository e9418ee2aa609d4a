// Package invariants exposes Enabled, which turns on the expensive self-checks
// of the allocators and the simulator.
//
// Enabled is a constant, so the checks cost nothing in normal builds: the
// compiler removes every `if invariants.Enabled { ... }` block. It is true when
// the binary is built with `-tags invariants` or with the race detector
// (`-race`), as in pebble's internal/invariants, unless `-tags noinvariants`
// is also given. CI runs the tests both ways: plain, and with `-tags
// invariants`; its race step adds `-tags noinvariants`, since the invariants
// step already runs every self-check and, under the race detector, the
// checks (quadratic in places) made single CLI tests run for minutes.
package invariants
