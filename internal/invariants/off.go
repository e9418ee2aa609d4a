//go:build !(invariants || race) || noinvariants

package invariants

// Enabled is false: this build skips the self-checks.
const Enabled = false
