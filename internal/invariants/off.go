//go:build !invariants && !race

package invariants

// Enabled is false: this build skips the self-checks.
const Enabled = false
