package mem

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestDevice(t *testing.T) {
	d := MustDevice(10*PageSize, 2*PageSize)
	if d.Free() != 8*PageSize || d.CheckUnused("x") != nil {
		t.Fatalf("fresh device: free %d", d.Free())
	}
	if !d.Reserve(3*PageSize) || d.Reserve(6*PageSize) || d.Reserve(0) {
		t.Fatal("Reserve: 3 pages fit, then 6 more do not, and 0 is refused")
	}
	if err := d.CheckUnused("alloc"); !errors.Is(err, ErrConfig) {
		t.Fatalf("CheckUnused on a used device: %v", err)
	}
	a, b := d.ReserveVA(1), d.ReserveVA(3*PageSize)
	if b-a != uint64(PageSize) || a%uint64(PageSize) != 0 {
		t.Fatalf("VA ranges %#x %#x not page aligned and disjoint", a, b)
	}
	c := d.Clone()
	c.Release(3 * PageSize)
	if d.Used() != 3*PageSize || c.Used() != 0 || d.RawAllocs() != 1 {
		t.Fatal("clone shares state")
	}
	for _, bad := range [][2]int64{{0, 0}, {-1, 0}, {10, 11}, {10, -1}} {
		if _, err := NewDevice(bad[0], bad[1]); !errors.Is(err, ErrConfig) {
			t.Errorf("NewDevice(%d, %d): %v", bad[0], bad[1], err)
		}
	}
}

// TestDeviceLimits: the capacity limit, address space exhaustion, a VA hook
// whose range would wrap, and huge sizes are answers, never panics or
// wrapped addresses.
func TestDeviceLimits(t *testing.T) {
	if _, err := NewDevice(MaxCapacity, 0); err != nil {
		t.Fatalf("NewDevice at the limit: %v", err)
	}
	for _, c := range []int64{MaxCapacity + 1, math.MaxInt64, 9223300000000000000} {
		_, err := NewDevice(c, 0)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "1024TiB") || !strings.Contains(err.Error(), strconv.FormatInt(c, 10)) {
			t.Errorf("NewDevice(%d): %v, want ErrConfig naming the capacity and the 1024TiB limit", c, err)
		}
	}

	d := MustDevice(MaxCapacity, 0)
	for _, size := range []int64{MaxRequest + 1, math.MaxInt64, math.MaxInt64 - 1} {
		if a, ok := d.TryReserveVA(size); ok {
			t.Errorf("TryReserveVA(%d) = %#x, want refused", size, a)
		}
	}
	// Ranges of MaxRequest bytes until the 64-bit space is used up: each
	// lies above the last, none wraps, and the first refusal changes nothing.
	var last uint64
	n := 0
	for ; n < 1<<13; n++ {
		a, ok := d.TryReserveVA(MaxRequest)
		if !ok {
			break
		}
		if a < last || a+uint64(MaxRequest) <= a {
			t.Fatalf("range %d at %#x after %#x", n, a, last)
		}
		last = a
	}
	if want := int((math.MaxUint64 - DefaultVABase) / uint64(MaxRequest)); n != want {
		t.Errorf("%d ranges of MaxRequest fit, want %d", n, want)
	}
	if _, ok := d.TryReserveVA(MaxRequest); ok {
		t.Error("a range after exhaustion was handed out")
	}
	if a, ok := d.TryReserveVA(PageSize); !ok || a <= last {
		t.Errorf("a small range still fits at the top: %#x, %v", a, ok)
	}

	h := MustDevice(GiB, 0)
	h.SetVAHook(func(int64) uint64 { return math.MaxUint64 - uint64(PageSize) + 1 })
	if _, ok := h.TryReserveVA(PageSize); ok {
		t.Error("a hook range ending at 2^64 was accepted")
	}
	if !h.ReservePages(3, PageSize) || h.Used() != 3*PageSize || h.RawAllocs() != 3 {
		t.Fatalf("ReservePages: used %d in %d calls", h.Used(), h.RawAllocs())
	}
	if h.ReservePages(math.MaxInt64, PageSize) || h.ReservePages(1, math.MaxInt64) || h.Used() != 3*PageSize {
		t.Error("ReservePages of more than is free took something")
	}
	h.ReleasePages(2, PageSize)
	if h.Used() != PageSize || h.RawFrees() != 2 {
		t.Errorf("ReleasePages: used %d, %d frees", h.Used(), h.RawFrees())
	}
	h.Unreserve(PageSize)
	if h.Used() != 0 || h.RawAllocs() != 2 {
		t.Errorf("Unreserve: used %d, %d allocs", h.Used(), h.RawAllocs())
	}
}
