package optrace

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
)

// WriteText prints the report for people (`gpufrag replay`): a header
// saying what was replayed (what: the trace's name or a description of it,
// printed through untrusted.Printable; ops: the trace's length), a table with one
// row per allocator, a legend, each allocator's state at the end weighed
// by frag.Judge, and the first out-of-memory error of each allocator that
// had one.
func (r *Report) WriteText(w io.Writer, what string, ops int) error {
	return r.WriteTextWidth(w, what, ops, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): the table is human.Table's with that
// Width (a table wider prints stacked, short allocator names beside their
// figures) and the peak reserved sentence wraps at its spaces
// (human.WrapLong); the other sentences wrap at 80 in every layout.
func (r *Report) WriteTextWidth(w io.Writer, what string, ops, width int) error {
	var sb strings.Builder
	rs, capacity := r.Results, r.CapacityBytes
	device := "a device of " + mem.FormatBytes(capacity)
	if r.OtherUseBytes > 0 {
		device += " (" + mem.FormatBytes(r.OtherUseBytes) + " of it in other use)"
	}
	fmt.Fprintf(&sb, "%s\n\n", human.Wrap(fmt.Sprintf("Replayed %s ops of %s through %d allocator%s on %s.",
		human.Thousands(ops), untrusted.Printable(what), len(rs), human.PluralS(len(rs)), device), 80))

	t := human.Table{
		Groups: []human.Group{{From: 1, To: 2, Label: "reserved"}, {From: 3, To: 4, Label: "allocated"}, {From: 6, To: 7, Label: "health"}, {From: 8, To: 9, Label: "at the end"}},
		Head:   []string{"allocator", "peak", "end", "peak", "end", "OOMs", "peak", "end", "largest free", "max allocatable"},
		Width:  width,
	}
	for _, r := range rs {
		t.Rows = append(t.Rows, []string{
			r.Allocator,
			human.Bytes(r.PeakReservedBytes), human.Bytes(r.EndReservedBytes),
			human.Bytes(r.PeakAllocatedBytes), human.Bytes(r.EndAllocatedBytes),
			strconv.Itoa(r.OOMs),
			fmt.Sprintf("%.2f", r.AtPeak.Health), fmt.Sprintf("%.2f", r.End.Health),
			human.Bytes(r.End.LargestFreeBlock), human.Bytes(r.End.MaxAllocatable),
		})
	}
	t.Write(&sb)

	sb.WriteString("\nhealth: largest free block ÷ free memory inside the allocator's segments\n" +
		"        (1 = one piece; below 0.5 it is worth acting on when memory is at stake)\n")
	if len(rs) > 1 {
		lo, hi := rs[0].PeakReservedBytes, rs[0].PeakReservedBytes
		for _, r := range rs {
			lo, hi = min(lo, r.PeakReservedBytes), max(hi, r.PeakReservedBytes)
		}
		if lo != hi {
			sb.WriteString(human.WrapLong(fmt.Sprintf("peak reserved: from %s (%s) to %s (%s)\n",
				human.Bytes(lo), allocatorsWith(rs, lo), human.Bytes(hi), allocatorsWith(rs, hi)), width))
		}
	}

	sb.WriteString("\nAt the end, weighed by the memory at stake:\n")
	for _, r := range rs {
		v := frag.Judge(frag.Stake{Health: r.End.Health, CachedFree: r.EndReservedBytes - r.EndAllocatedBytes,
			Reserved: r.EndReservedBytes, Capacity: capacity, OOMs: r.OOMs})
		fmt.Fprintf(&sb, "%s\n", human.WrapHang(fmt.Sprintf("  %s: %s (%s)", r.Allocator, v.Label, v.Why), 80, 6))
	}

	heading := true
	for _, r := range rs {
		o := r.FirstOOM
		if o == nil {
			continue
		}
		if heading {
			sb.WriteString("\nOut of memory:\n")
			heading = false
		}
		skipped := ""
		if r.SkippedOps > 0 {
			skipped = fmt.Sprintf(", %s later op%s on their ids skipped", human.Thousands(r.SkippedOps), human.PluralS(r.SkippedOps))
		}
		fmt.Fprintf(&sb, "  %s: %s alloc%s failed%s\n", r.Allocator, human.Thousands(r.OOMs), human.PluralS(r.OOMs), skipped)
		first := fmt.Sprintf("first on line %d (%s, %s): %s", o.Line, untrusted.Printable(o.ID), human.Bytes(o.Size), untrusted.Printable(o.Message))
		fmt.Fprintf(&sb, "%s\n", human.Indent(human.Wrap(first, 76), "    "))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// allocatorsWith lists the allocators whose peak reserved bytes are peak.
func allocatorsWith(rs []Result, peak int64) string {
	var names []string
	for _, r := range rs {
		if r.PeakReservedBytes == peak {
			names = append(names, r.Allocator)
		}
	}
	return strings.Join(names, ", ")
}
