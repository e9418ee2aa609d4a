//go:build invariants || race

package invariants

// Enabled is true: this build runs the self-checks.
const Enabled = true
