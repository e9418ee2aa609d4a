package mem

import (
	"errors"
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
