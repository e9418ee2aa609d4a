package cli

import "testing"

func TestWantHugeHeap(t *testing.T) {
	for _, c := range []struct {
		mode, overcommit, godebug, memlimit string
		want                                bool
	}{
		{"always [madvise] never\n", "0\n", "", "", true},
		{"always [madvise] never\n", "", "", "", true}, // no overcommit file: the default
		{"always [madvise] never\n", "1\n", "", "", true},
		{"always [madvise] never\n", "2\n", "", "", false}, // strict commit accounting
		{"[always] madvise never\n", "0\n", "", "", false}, // the kernel does it already
		{"always madvise [never]\n", "0\n", "", "", false},
		{"", "0\n", "", "", false}, // no THP in this kernel
		{"always [madvise] never\n", "0\n", "disablethp=1", "", false},
		{"always [madvise] never\n", "0\n", "gctrace=1,disablethp=1", "", false},
		{"always [madvise] never\n", "0\n", "disablethp=1,disablethp=0", "", true}, // the last one wins
		{"always [madvise] never\n", "0\n", "disablethp=0", "", true},
		{"always [madvise] never\n", "0\n", "", "512MiB", false},
	} {
		if got := wantHugeHeap(c.mode, c.overcommit, c.godebug, c.memlimit); got != c.want {
			t.Errorf("wantHugeHeap(%q, overcommit %q, GODEBUG=%q, GOMEMLIMIT=%q) = %v, want %v",
				c.mode, c.overcommit, c.godebug, c.memlimit, got, c.want)
		}
	}
}

// TestEngineHeapOnlyInProcess: Main, which tests call many times in one
// process, leaves the heap alone; only MainProcess sets wholeProcess.
func TestEngineHeapOnlyInProcess(t *testing.T) {
	if wholeProcess {
		t.Fatal("wholeProcess set in a test process")
	}
}
