// Package invariants exposes Enabled, which turns on the expensive self-checks
// of the allocators and the simulator.
//
// Enabled is a constant, so the checks cost nothing in normal builds: the
// compiler removes every `if invariants.Enabled { ... }` block. It is true when
// the binary is built with `-tags invariants` or with the race detector
// (`-race`), as in pebble's internal/invariants. CI runs the tests both ways.
package invariants
