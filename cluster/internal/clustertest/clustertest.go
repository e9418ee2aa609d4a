// Package clustertest holds what the tests of the cluster packages share:
// the openb lists of cluster/testdata and of the shared trace
// (../shared/data/openb, skipped when absent), read with the package's
// own readers, and a float comparison. It is imported by tests only.
package clustertest

import (
	"github.com/gpufrag/gpufrag/internal/testkit"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/lists"
)

// Testdata returns the path of cluster/testdata/name.
func Testdata(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(testkit.ModuleRoot(t), "cluster", "testdata", name)
}

// SharedDir is the folder of the shared openb trace, ../shared/data/openb
// beside the repository; it may be absent (a clone alone).
func SharedDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testkit.ModuleRoot(t), "..", "shared", "data", "openb")
}

// Shared returns the path of a file of the shared openb trace, or skips
// the test when the shared data folder is absent.
func Shared(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(SharedDir(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared trace %s not present (%v): this test needs ../shared/data/openb next to the repository", name, err)
	}
	return p
}

// Nodes reads the node list at path or fails the test.
func Nodes(t testing.TB, path string) []cluster.Node {
	t.Helper()
	nodes, err := lists.ReadNodesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// Pods reads the pod list at path or fails the test.
func Pods(t testing.TB, path string) []cluster.Pod {
	t.Helper()
	pods, err := lists.ReadPodsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// Near reports whether a and b differ by less than 1e-6.
func Near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
