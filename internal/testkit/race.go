//go:build race

package testkit

// Race is true in a build with the race detector (-race).
const Race = true
