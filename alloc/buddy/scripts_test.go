package buddy

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/alloctest"
)

// TestScripts runs the commented scenarios in testdata/scripts. Regenerate
// with
//
//	go test ./alloc/buddy/ -run TestScripts -rewrite
//
// and commit the diff only after reading every changed output.
func TestScripts(t *testing.T) {
	alloctest.RunScripts(t, "testdata/scripts", FromSpec)
}
