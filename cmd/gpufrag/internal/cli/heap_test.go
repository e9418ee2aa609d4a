package cli

import "testing"

func TestWantHugeHeap(t *testing.T) {
	for _, c := range []struct {
		mode, godebug, memlimit string
		want                    bool
	}{
		{"always [madvise] never\n", "", "", true},
		{"[always] madvise never\n", "", "", false}, // the kernel does it already
		{"always madvise [never]\n", "", "", false},
		{"", "", "", false}, // no THP in this kernel
		{"always [madvise] never\n", "disablethp=1", "", false},
		{"always [madvise] never\n", "gctrace=1,disablethp=1", "", false},
		{"always [madvise] never\n", "disablethp=1,disablethp=0", "", true}, // the last one wins
		{"always [madvise] never\n", "disablethp=0", "", true},
		{"always [madvise] never\n", "", "512MiB", false},
	} {
		if got := wantHugeHeap(c.mode, c.godebug, c.memlimit); got != c.want {
			t.Errorf("wantHugeHeap(%q, GODEBUG=%q, GOMEMLIMIT=%q) = %v, want %v", c.mode, c.godebug, c.memlimit, got, c.want)
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
