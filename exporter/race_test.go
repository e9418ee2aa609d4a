//go:build race

package exporter

// raceEnabled: the race detector is on (memory bounds of the soak test).
const raceEnabled = true
