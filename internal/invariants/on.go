//go:build (invariants || race) && !noinvariants

package invariants

// Enabled is true: this build runs the self-checks.
const Enabled = true
