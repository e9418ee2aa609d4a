// Size-class allocator: the per-class waste table.
// See package alloc for the overview.

package sizeclass

import (
	"fmt"
	"strings"
)

// ClassWaste is one row of WasteTable: a class's slab geometry and the two
// kinds of waste it causes.
type ClassWaste struct {
	Class        int64 // slot size
	SlotsPerSlab int64 // max(1, SlabTarget / Class)
	SlabBytes    int64 // SlotsPerSlab × Class rounded up to driver pages: one raw device allocation
	// TailWaste is SlabBytes − SlotsPerSlab × Class: the end of every slab,
	// which no slot covers. It shows up as a permanently free block, and it
	// is real waste: no request can ever use it.
	TailWaste int64
	// MaxRoundingWaste is the worst internal waste of one block in this
	// class: the class size minus its smallest request (one byte more than
	// the class below, or 1 for the first class).
	MaxRoundingWaste int64
}

// WasteTable lists the slab geometry and worst-case waste of every class of
// cfg (an empty class list means DefaultClasses). cfg must be valid
// (Config.Validate).
func WasteTable(cfg Config) []ClassWaste {
	cfg.EnsureDefaults()
	rows := make([]ClassWaste, len(cfg.Classes))
	var prev int64
	for i, c := range cfg.Classes {
		n, b := slabGeometry(c)
		rows[i] = ClassWaste{
			Class:            c,
			SlotsPerSlab:     n,
			SlabBytes:        b,
			TailWaste:        b - n*c,
			MaxRoundingWaste: c - (prev + 1),
		}
		prev = c
	}
	return rows
}

// FormatWasteTable renders rows as an aligned text table, the one the
// package doc shows for the default classes, in the manner of the Go
// runtime's sizeclasses.go header. Shares are of the class size (rounding)
// and of the slab (tail).
func FormatWasteTable(rows []ClassWaste) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-10s %6s %10s %10s %8s %14s %9s\n", "class", "slots", "slab", "tail", "tail%", "max-rounding", "round%")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-10s %6d %10s %10s %7.2f%% %14d %8.2f%%\n",
			formatExact(r.Class), r.SlotsPerSlab, formatExact(r.SlabBytes), formatExact(r.TailWaste),
			100*float64(r.TailWaste)/float64(r.SlabBytes), r.MaxRoundingWaste,
			100*float64(r.MaxRoundingWaste)/float64(r.Class))
	}
	return sb.String()
}
