// Package gcgoal sets a command's garbage-collector goal (GOGC) where the
// user has not: the one way the engine's commands (cmd/gpufrag/internal/cli)
// and the exporter daemon choose theirs.
package gcgoal

import (
	"os"
	"runtime/debug"
)

// Set sets the collector's goal to percent unless one of the environment
// variables named in yieldTo is set (the user's settings win), and returns
// the function that restores the previous goal.
func Set(percent int, yieldTo ...string) (restore func()) {
	for _, name := range yieldTo {
		if os.Getenv(name) != "" {
			return func() {}
		}
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}
