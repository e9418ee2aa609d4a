package vmm

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/alloctest"
)

// TestScripts runs the commented scenarios in testdata/scripts (Grow has its
// own in testdata/grow, see TestGrowScripts). Rerun with -rewrite to
// regenerate their output, and keep the diff only if you understand why it
// changed.
func TestScripts(t *testing.T) {
	alloctest.RunScripts(t, "testdata/scripts", FromSpec)
}
