package async

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/mem"
)

// TestScripts runs the commented scenarios in testdata/scripts. Regenerate
// with
//
//	go test ./alloc/async/ -run TestScripts -rewrite
//
// and commit the diff only after reading every changed output.
func TestScripts(t *testing.T) {
	alloctest.RunScripts(t, "testdata/scripts", FromSpec, freeLists)
}

// freeLists adds the script command "free-lists", which prints who may use
// which free bytes: the memory free for every stream, then each stream's
// pending frees (reusable by that stream only until the next sync).
func freeLists(t *testing.T, env *alloctest.ScriptEnv, td *datadriven.TestData) (string, bool) {
	if td.Cmd != "free-lists" {
		return "", false
	}
	p := env.A.(*Allocator)
	var sb strings.Builder
	list := func(name string, s *extent.Set) {
		fmt.Fprintf(&sb, "%s:", name)
		if s == nil || s.Len() == 0 {
			sb.WriteString(" none")
			sb.WriteByte('\n')
			return
		}
		for e := range s.All() {
			fmt.Fprintf(&sb, " [%s,%s)", mem.FormatAddr(e.Addr), mem.FormatAddr(e.End()))
		}
		sb.WriteByte('\n')
	}
	list("ready", &p.ready)
	for _, id := range slices.Sorted(maps.Keys(p.streams)) {
		list(fmt.Sprintf("pending on stream %d", id), p.streams[id].pending)
	}
	return sb.String(), true
}
