//go:build !unix

package examples

import "os/exec"

// ownGroup does nothing where there are no process groups: cancelling kills
// sh alone, and WaitDelay stops waiting for its children's output.
func ownGroup(*exec.Cmd) {}
