package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeapBacksNewAllocations: after hugeHeap, a large allocation the
// heap grows into is backed by huge pages (its mappings report
// AnonHugePages in /proc/self/smaps). It runs only where the kernel gives
// huge pages on request (mode madvise); elsewhere engineHeap does nothing.
// The check runs in a fresh process (this test binary again), whose heap
// is as young as the gpufrag command's: in this one, other tests' freed
// spans may serve the allocation.
func TestHugeHeapBacksNewAllocations(t *testing.T) {
	if os.Getenv(hugeHeapChild) == "1" {
		hugeHeapChildCheck()
		return
	}
	mode, err := os.ReadFile(thpPath)
	overcommit, _ := os.ReadFile(overcommitPath)
	if err != nil || !wantHugeHeap(string(mode), string(overcommit), "", "") {
		t.Skipf("engineHeap does not act here (%s: %q, %v; %s: %q)", thpPath, bytes.TrimSpace(mode), err, overcommitPath, bytes.TrimSpace(overcommit))
	}
	if defrag, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/defrag"); bytes.Contains(defrag, []byte("[never]")) {
		t.Skip("the kernel does not compact memory for huge pages here (defrag never)")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHugeHeapBacksNewAllocations$", "-test.count", "1")
	cmd.Env = append(os.Environ(), hugeHeapChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("huge pages: ok")) {
		t.Errorf("the check in a fresh process failed (%v):\n%s", err, out)
	}
}

// hugeHeapChild names the environment variable that makes
// TestHugeHeapBacksNewAllocations run its check.
const hugeHeapChild = "GPUFRAG_TEST_HUGEHEAP_CHILD"

// hugeHeapChildCheck is the check, in the fresh process: it prints
// "huge pages: ok" or why not.
func hugeHeapChildCheck() {
	hugeHeap(16 << 20)
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	kb, err := anonHugeKB(p, p+uintptr(len(b)))
	runtime.KeepAlive(b)
	switch {
	case err != nil:
		fmt.Println("huge pages:", err)
	case kb == 0:
		fmt.Println("huge pages: the 8 MiB allocated after hugeHeap is on 4 KiB pages (AnonHugePages 0 kB in its mappings)")
	default:
		fmt.Printf("huge pages: ok (%d kB)\n", kb)
	}
}

// anonHugeKB returns the AnonHugePages (kB) of the mappings of this
// process that overlap [lo, hi): the region's head, below its first huge
// page boundary, is a mapping of its own.
func anonHugeKB(lo, hi uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	in, seen, kb := false, false, 0
	for s.Scan() {
		line := s.Text()
		if a, b, ok := vmaRange(line); ok {
			in = a < hi && lo < b
			seen = seen || in
			continue
		}
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); in && ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				return 0, fmt.Errorf("/proc/self/smaps: %q: %w", line, err)
			}
			kb += n
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	if !seen {
		return 0, fmt.Errorf("no mapping of /proc/self/smaps overlaps [%#x, %#x)", lo, hi)
	}
	return kb, nil
}

// vmaRange parses the address range that starts a mapping's header line
// ("7f00-7f80 rw-p ...").
func vmaRange(line string) (lo, hi uintptr, ok bool) {
	r, _, found := strings.Cut(line, " ")
	a, b, dash := strings.Cut(r, "-")
	if !found || !dash {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
