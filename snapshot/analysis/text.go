package analysis

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
)

// WriteText writes the report for people; file names the input. Every
// string the snapshot supplies (a pool, a stream, a frame's file and
// function names) goes through untrusted.Printable, so control characters in a
// file from somebody else print as escapes, not as terminal commands.
func (r *Report) WriteText(w io.Writer, file string) error {
	return r.WriteTextWidth(w, file, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide: the
// what-if table's allocator column wraps its settings (wrapSettings) to
// keep the table within width; the segments table, 83 columns in its fixed
// layout, narrows its columns to their contents (writeWorstSegments); a
// sentence longer than width wraps at its spaces (human.WrapLong), a
// memory class's note under itself, the per-stream and per-pool figures
// that do not fit on a further line (human.JoinFit), and call sites that
// do not fit beside their figures go under them; 0 is no limit, the layout
// of WriteText.
func (r *Report) WriteTextWidth(w io.Writer, file string, width int) error {
	var b strings.Builder
	b.WriteString(human.WrapLong(fmt.Sprintf("%s: PyTorch memory snapshot, format %s, %d device(s)\n", untrusted.Printable(file), r.Format, len(r.Devices)), width))
	if h := r.PinnedHost; h != nil {
		b.WriteString(human.WrapLong(fmt.Sprintf("Pinned host memory (page-locked CPU memory, not in any device figure below): %d segments, %s reserved, %s allocated, %d trace events\n",
			h.Segments, fb(h.Reserved), fb(h.Allocated), h.Events), width))
	}
	if s := r.Stats; s != nil {
		writeStats(&b, s)
	}
	for _, d := range r.Devices {
		d.writeText(&b, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fb(n int64) string { return mem.FormatBytes(n) }

func pct(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

func writeStats(b *strings.Builder, s *StatsSummary) {
	fmt.Fprintf(b, "\ntorch.cuda.memory_stats():\n")
	fmt.Fprintf(b, "  reserved            %10s   (peak %s)\n", fb(s.Reserved), fb(s.PeakReserved))
	fmt.Fprintf(b, "  allocated           %10s   (peak %s)\n", fb(s.Allocated), fb(s.PeakAllocated))
	fmt.Fprintf(b, "  active              %10s\n", fb(s.Active))
	fmt.Fprintf(b, "  requested           %10s\n", fb(s.Requested))
	fmt.Fprintf(b, "  cached free         %10s   %s of reserved\n", fb(s.CachedFree), pct(s.CachedFree, s.Reserved))
	fmt.Fprintf(b, "  non-releasable      %10s   %.0f%% of cached free is stranded in split segments\n", fb(s.InactiveSplit), 100*s.StrandedShare)
	fmt.Fprintf(b, "  segments %d, allocations %d, OOMs %d, alloc retries %d\n", s.Segments, s.Allocations, s.OOMs, s.Retries)
	b.WriteString("  (memory_stats has no block sizes: take a snapshot with torch.cuda.memory._dump_snapshot for health and a replay)\n")
}

func (d Device) writeText(b *strings.Builder, termWidth int) {
	c, m := d.Classes, d.Metrics
	fmt.Fprintf(b, "\n== device %d: %d segments, %d blocks, %d trace events\n\n", d.Device, d.Segments, d.Blocks, d.TraceEvents)
	fmt.Fprintf(b, "Memory classes\n")
	row := func(name string, n int64, note string) {
		if note == "" {
			fmt.Fprintf(b, "  %-26s %10s  %6s  %s\n", name, fb(n), pct(n, c.Reserved), note)
			return
		}
		// A note that does not fit the terminal wraps under itself.
		head := fmt.Sprintf("  %-26s %10s  %6s ", name, fb(n), pct(n, c.Reserved))
		b.WriteString(human.JoinFit(append([]string{head}, strings.Fields(note)...), " ", termWidth, utf8.RuneCountInString(head)+1) + "\n")
	}
	row("reserved", c.Reserved, "segments held from CUDA")
	row("allocated", c.Allocated, "live blocks")
	row("requested", c.Requested, "what callers asked for")
	row("active", c.Active, "allocated + awaiting other streams")
	row("cached free", c.CachedFree, "free blocks inside segments")
	row("reserved but unallocated", c.ReservedUnallocated, "")
	row("rounding waste", c.InternalWaste, "live blocks' size − requested (pending free included)")
	row("stranded free", c.Stranded, "free, in segments a live block keeps")
	stake := frag.Stake{Health: m.Health, CachedFree: m.CachedFree, Reserved: c.Reserved, OOMs: len(d.OOMs)}
	if d.CapacitySource != "reserved" {
		stake.Capacity = d.Capacity
	}
	v := frag.Judge(stake)
	// The health sentence, wrapped to the terminal's width (human.WrapLong).
	outer := b
	b = new(strings.Builder)
	fmt.Fprintf(b, "\nHealth %.3f (frag rate %.3f): %s: %s. Largest free block %s of %s cached free; max allocatable %s",
		m.Health, m.FragRate, v.Label, v.Why, fb(m.LargestFreeBlock), fb(m.CachedFree), fb(m.MaxAllocatable))
	switch d.CapacitySource {
	case "reserved":
		b.WriteString(" (capacity unknown: cached memory only)")
	case "default":
		// gpufrag defrag reads a snapshot against its --gpu's usable memory
		// (h100-80g: 79.65GiB), so its max allocatable is lower unless the
		// capacities agree: say which one this is.
		fmt.Fprintf(b, " on a %s device (the default; not a GPU's usable memory: pass --capacity, as defrag's --gpu does)", fb(d.Capacity))
	default:
		if d.CapacityRaisedFrom > 0 {
			fmt.Fprintf(b, " on a %s device (oom entry, raised: the oom entries record %s, below the %s the snapshot reserves at its end, which the device held)",
				fb(d.Capacity), fb(d.CapacityRaisedFrom), fb(d.Classes.Reserved))
			break
		}
		fmt.Fprintf(b, " on a %s device (%s)", fb(d.Capacity), d.CapacitySource)
	}
	fmt.Fprintf(b, ".\nSize dispersion: %d distinct live block sizes, entropy %.2f bits.\n", m.DistinctSizes, m.SizeEntropy)
	outer.WriteString(human.WrapLong(b.String(), termWidth))
	b = outer

	if len(d.WorstSegments) > 0 {
		b.WriteString("\nSegments that waste most (stranded free + rounding)\n")
		writeWorstSegments(b, d.WorstSegments, termWidth)
	}
	groups := func(title string, gs []Group) {
		fmt.Fprintf(b, "\n%s\n", title)
		for _, g := range gs {
			// Fields that do not fit the terminal go on a further line,
			// every row's at the same places (human.JoinFit).
			b.WriteString(human.JoinFit([]string{fmt.Sprintf("  %-22s %4d segments", untrusted.Printable(g.Name), g.Segments),
				fmt.Sprintf("reserved %10s", fb(g.Reserved)), fmt.Sprintf("active %10s", fb(g.Active)),
				fmt.Sprintf("cached free %10s", fb(g.CachedFree)), fmt.Sprintf("health %.3f", g.Health)}, "  ", termWidth, 4) + "\n")
		}
	}
	if len(d.Streams) > 0 {
		groups("Per stream", d.Streams)
		groups("Per pool", d.Pools)
	}
	if len(d.Sites) > 0 {
		b.WriteString("\nCall sites whose live blocks hold fragmented segments open\n")
		for _, s := range d.Sites {
			b.WriteString(human.JoinFit([]string{fmt.Sprintf("  %10s held free  %4d blocks (%s) in %d segments", fb(s.Held), s.Blocks, fb(s.Live), s.Segments),
				human.ClipName(untrusted.Printable(s.Frame), siteNameCap(termWidth))}, "  ", termWidth, 4) + "\n")
		}
	}
	d.Attribution.writeText(b, termWidth)
	listed, more := textOOMs(d.OOMs)
	for _, o := range listed {
		fmt.Fprintf(b, "\nOut of memory at event %d: requested %s (segment %s), device free %s\n  cause: %s: %s\n  at: %s\n",
			o.Event, fb(o.Requested), fb(o.AllocSize), fb(o.DeviceFree), o.Cause, o.Why, untrusted.Printable(siteOf(o.Frames)))
		if o.During != "" {
			fmt.Fprintf(b, "  during: %s (record_function range open at the time)\n", untrusted.Printable(o.During))
		}
		if o.UserMetadata != "" {
			fmt.Fprintf(b, "  user metadata: %s\n", untrusted.Printable(o.UserMetadata))
		}
	}
	b.WriteString(more)
	if f := d.Replay; f != nil && f.Source == SourceHistory {
		writeHistoryReplay(b, f)
	} else if f := d.Replay; f != nil && (f.Allocs > 0 || f.Skipped != "" || f.SeededSegments > 0) {
		fmt.Fprintf(b, "\nReplay fidelity (caching model, settings %q)\n", f.Settings)
		if f.Skipped != "" {
			fmt.Fprintf(b, "  not replayed: %s\n", untrusted.Printable(f.Skipped))
		} else {
			fmt.Fprintf(b, "  pre-trace state rebuilt: %d segments, %d live blocks\n", f.SeededSegments, f.SeededBlocks)
			if f.PrivateSegments > 0 || f.PrivateAllocs > 0 {
				fmt.Fprintf(b, "  private pools (CUDA graphs, MemPool): %d pre-trace segments seeded into their pools, %d allocs routed to them\n",
					f.PrivateSegments, f.PrivateAllocs)
			}
			if f.Allocs == 0 {
				fmt.Fprintf(b, "  no alloc event in a trace of %d entries (PyTorch 2.0 kept one entry by default): nothing to compare\n", d.TraceEvents)
			}
			fmt.Fprintf(b, "  alloc addresses reproduced       %6d / %-6d %s\n", f.AddressMatches, f.Allocs, pct(int64(f.AddressMatches), int64(f.Allocs)))
			fmt.Fprintf(b, "  segment_alloc sizes reproduced   %6d / %-6d %s\n", f.SegmentSizeMatches, f.SegmentAllocs, pct(int64(f.SegmentSizeMatches), int64(f.SegmentAllocs)))
			if f.SegmentFrees > 0 {
				fmt.Fprintf(b, "  segment_free releases reproduced %6d / %-6d %s\n", f.SegmentFreeMatches, f.SegmentFrees, pct(int64(f.SegmentFreeMatches), int64(f.SegmentFrees)))
			}
			fmt.Fprintf(b, "  final blocks reproduced          %6d / %-6d %s\n", f.FinalBlockMatches, f.FinalBlocks, pct(int64(f.FinalBlockMatches), int64(f.FinalBlocks)))
			if f.ExtraSegments > 0 || f.UnknownFrees > 0 {
				fmt.Fprintf(b, "  extra segments %d, frees of unknown addresses %d\n", f.ExtraSegments, f.UnknownFrees)
			}
			for _, mm := range f.Mismatches {
				fmt.Fprintf(b, "  mismatch: %s\n", untrusted.Printable(mm.String()))
			}
		}
	}
	if len(d.Timeline) > 1 {
		var peakR, peakA Point
		for _, p := range d.Timeline {
			if p.Reserved > peakR.Reserved {
				peakR = p
			}
			if p.Allocated > peakA.Allocated {
				peakA = p
			}
		}
		last := d.Timeline[len(d.Timeline)-1]
		b.WriteString(human.WrapLong(fmt.Sprintf("\nTimeline (%d points): peak reserved %s at event %d (frag rate %.3f), peak allocated %s at event %d, end frag rate %.3f\n",
			len(d.Timeline), fb(peakR.Reserved), peakR.Event, peakR.FragRate, fb(peakA.Allocated), peakA.Event, last.FragRate), termWidth))
	}
	if w := d.WhatIf; w != nil {
		if w.OOMRequests > 0 {
			fmt.Fprintf(b, "\nWhat if (%d ops on a %s device; OOMs count the trace's %d oom entries, replayed as requests)\n", w.Ops, fb(w.Capacity), w.OOMRequests)
		} else {
			fmt.Fprintf(b, "\nWhat if (%d ops on a %s device)\n", w.Ops, fb(w.Capacity))
		}
		width := len("allocator")
		for _, a := range w.Results {
			width = max(width, utf8.RuneCountInString(a.Settings+recordedMark(a.Recorded)))
		}
		width = min(width, whatIfNameCap(termWidth))
		fmt.Fprintf(b, "  %-*s %13s %5s %10s\n", width, "allocator", "peak reserved", "OOMs", "frag@peak")
		for _, a := range w.Results {
			lines := wrapSettings(a.Settings, recordedMark(a.Recorded), width)
			fmt.Fprintf(b, "  %-*s %13s %5d %10.3f\n", width, lines[0], fb(a.PeakReserved), a.OOMs, a.PeakFragRate)
			for _, l := range lines[1:] {
				fmt.Fprintf(b, "    %s\n", l)
			}
		}
		if w.PrivateRequests > 0 {
			writePrivateWhatIf(b, w)
		}
		line := w.Recommendation
		if strings.HasSuffix(line, "=") {
			line += "   (empty: PyTorch's defaults)"
		}
		reason := "because " + w.Reason
		if rest, ok := strings.CutPrefix(w.Reason, "keep "); ok {
			reason = "Keep " + rest // a reason that is itself an advice, not a cause
		}
		b.WriteString(human.WrapLong(fmt.Sprintf("\nRecommendation: %s\n  %s.\n  (%s.)\n", line, reason, registry.EnvVarNote), termWidth))
	}
}

// writeWorstSegments writes the table of the segments that waste most.
// Its fixed columns make it 83 characters wide; on a terminal narrower than
// that (termWidth; 0 is no limit) its columns are as wide as their
// headings and cells, two spaces apart (72 characters for PyTorch's
// addresses and pools), through human.Table, which stacks the rows on a
// terminal narrower still; a pool's name is clipped to segmentPoolCap.
func writeWorstSegments(b *strings.Builder, ws []SegmentWaste, termWidth int) {
	var wide strings.Builder
	fmt.Fprintf(&wide, "  %-16s %10s %-8s %5s %5s %10s %10s %10s\n", "address", "size", "pool", "live", "free", "stranded", "largest", "rounding")
	for _, w := range ws {
		fmt.Fprintf(&wide, "  %-16s %10s %-8s %5d %5d %10s %10s %10s\n", fmt.Sprintf("%#x", w.Address), fb(w.Size), untrusted.Printable(w.Pool),
			w.LiveBlocks, w.FreeBlocks, fb(w.Stranded), fb(w.LargestFree), fb(w.InternalWaste))
	}
	if termWidth <= 0 || human.Widest(wide.String()) <= termWidth {
		b.WriteString(wide.String())
		return
	}
	t := human.Table{Head: []string{"address", "size", "pool", "live", "free", "stranded", "largest", "rounding"}, Width: termWidth - 2}
	for _, w := range ws {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%#x", w.Address), fb(w.Size), human.ClipName(untrusted.Printable(w.Pool), segmentPoolCap),
			fmt.Sprint(w.LiveBlocks), fmt.Sprint(w.FreeBlocks), fb(w.Stranded), fb(w.LargestFree), fb(w.InternalWaste)})
	}
	writeIndented(b, t)
}

// writeIndented writes t with the report's indent of a table (2 spaces)
// before every line that is not blank.
func writeIndented(b *strings.Builder, t human.Table) {
	var table strings.Builder
	t.Write(&table)
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
}

// segmentPoolCap caps a pool's name in the segments table on a terminal
// narrower than its fixed columns: "large", "small" and "pool 1_2" print
// whole, a longer name (a snapshot's own segment type) keeps its end, so
// that the table still fits 80 columns.
const segmentPoolCap = 12

// siteNameWidth caps a call site or frame as the text prints it: longer
// ones keep their end (the function) after a leading "…" (human.ClipName).
const siteNameWidth = 80

// siteNameMin is the narrowest siteNameCap clips a call site to on a
// narrow terminal: a file, its line and a function's name.
const siteNameMin = 40

// siteNameCap is the cap on a call site or frame for a terminal width
// columns wide (0: no terminal, siteNameWidth): what fits after a further
// line's indent of 4, at least siteNameMin.
func siteNameCap(width int) int {
	if width <= 0 {
		return siteNameWidth
	}
	return max(min(siteNameWidth, width-4), siteNameMin)
}

// whatIfNameWidth caps the what-if table's allocator column; longer
// settings wrap (wrapSettings).
const whatIfNameWidth = 80

// whatIfFigures is the width of the what-if table's line but its allocator
// column: the indent and the peak reserved, OOMs and frag@peak columns.
const whatIfFigures = len("  ") + len(" ") + 13 + len(" ") + 5 + len(" ") + 10

// whatIfNameMin is the narrowest the allocator column gets on a narrow
// terminal: "caching:max_split_size_mb:64" (28) and most keys with their
// values stay on one line; a longer key wraps within itself.
const whatIfNameMin = 28

// whatIfNameCap is the allocator column's cap for a terminal width columns
// wide (0: no terminal, whatIfNameWidth): the room the figures leave, at
// least whatIfNameMin.
func whatIfNameCap(width int) int {
	if width <= 0 {
		return whatIfNameWidth
	}
	return max(min(whatIfNameWidth, width-whatIfFigures), whatIfNameMin)
}

func recordedMark(recorded bool) string {
	if recorded {
		return " (recorded)"
	}
	return ""
}

// wrapSettings breaks settings followed by mark into lines of at most width
// characters, after a comma where it can (a key and its value stay
// together), else within a key; lines after the first are for an indent of
// two more characters, so they take two fewer.
func wrapSettings(settings, mark string, width int) []string {
	var parts []string
	for rest := settings; rest != ""; {
		i := strings.IndexByte(rest, ',')
		if i < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:i+1])
		rest = rest[i+1:]
	}
	if mark != "" {
		parts = append(parts, mark)
	}
	var lines []string
	line := ""
	for _, p := range parts {
		limit := width
		if len(lines) > 0 {
			limit = width - 2
		}
		if line != "" && utf8.RuneCountInString(line+p) > limit {
			lines = append(lines, line)
			line = strings.TrimPrefix(p, " ")
			limit = width - 2
		} else {
			line += p
		}
		for r := []rune(line); len(r) > limit; r = []rune(line) {
			lines = append(lines, string(r[:limit]))
			line = string(r[limit:])
			limit = width - 2
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// writePrivateWhatIf says which alternatives kept the private pools'
// requests apart and which served them from their default pools.
func writePrivateWhatIf(b *strings.Builder, w *WhatIf) {
	var unrouted []string
	for _, a := range w.Results {
		if a.UnroutedPrivate > 0 {
			unrouted = append(unrouted, a.Settings)
		}
	}
	fmt.Fprintf(b, "  %d requests of private pools (CUDA graphs, MemPool) replayed in their pools", w.PrivateRequests)
	if len(unrouted) == 0 {
		b.WriteString("\n")
		return
	}
	verb, their := "have", "their"
	if len(unrouted) == 1 {
		verb, their = "has", "its"
	}
	fmt.Fprintf(b, "; %s %s no private pools and served them from %s default pools\n", strings.Join(unrouted, ", "), verb, their)
}

// writeHistoryReplay reports a replay rebuilt from legacy block histories,
// saying plainly what its reconstructed order can and cannot show.
func writeHistoryReplay(b *strings.Builder, f *Fidelity) {
	fmt.Fprintf(b, "\nReplay fidelity (caching model, settings %q), from block histories\n", f.Settings)
	if f.Skipped != "" {
		fmt.Fprintf(b, "  not replayed: %s\n", untrusted.Printable(f.Skipped))
		return
	}
	b.WriteString("  The trace records no alloc event, so the allocation ORDER IS RECONSTRUCTED, NOT RECORDED: segments in\n" +
		"  address order, each segment's blocks in address order, each live block allocated with its history's\n" +
		"  request, free stretches filled by placeholders freed once every segment is built; no segment is seeded.\n" +
		"  This tests the segment size the model obtains for a segment's first request, every block's rounding\n" +
		"  and the split rules (a wrong size moves every later address of its segment) and the pool choice. It\n" +
		"  does not test best fit among cached blocks, frees or merging: the real order is not in the file.\n")
	fmt.Fprintf(b, "  history allocs at recorded address %6d / %-6d %s\n", f.AddressMatches, f.Allocs, pct(int64(f.AddressMatches), int64(f.Allocs)))
	fmt.Fprintf(b, "  segments obtained at recorded size %6d / %-6d %s (of %d recorded segments)\n", f.SegmentSizeMatches, f.SegmentAllocs,
		pct(int64(f.SegmentSizeMatches), int64(f.SegmentAllocs)), f.HistorySegments)
	fmt.Fprintf(b, "  final blocks reproduced            %6d / %-6d %s\n", f.FinalBlockMatches, f.FinalBlocks, pct(int64(f.FinalBlockMatches), int64(f.FinalBlocks)))
	fmt.Fprintf(b, "  placeholder requests %d, history entries not replayed %d, extra segments %d, private-pool segments %d\n",
		f.Placeholders, f.SkippedHistoryEntries, f.ExtraSegments, f.PrivateSegments)
	for _, mm := range f.Mismatches {
		fmt.Fprintf(b, "  mismatch: %s\n", untrusted.Printable(mm.String()))
	}
}

// MaxTextOOMs is the most out-of-memory entries the text reports (analyze,
// diff) list per device; the rest are counted by cause. A server that
// failed hundreds of times would otherwise bury the replay, the what-ifs
// and the recommendation under them. The JSON documents list them all.
const MaxTextOOMs = 10

// textOOMs is the entries a text report lists and, when it leaves some
// out, the line that counts them ("" when it lists them all).
func textOOMs(ooms []OOM) (listed []OOM, more string) {
	if len(ooms) <= MaxTextOOMs {
		return ooms, ""
	}
	rest := ooms[MaxTextOOMs:]
	byCause := map[string]int{}
	var causes []string
	for _, o := range rest {
		if byCause[o.Cause] == 0 {
			causes = append(causes, o.Cause)
		}
		byCause[o.Cause]++
	}
	var parts []string
	for _, c := range causes {
		parts = append(parts, fmt.Sprintf("%s %d", c, byCause[c]))
	}
	return ooms[:MaxTextOOMs], fmt.Sprintf("\n... %d more out-of-memory entries not listed (events %d to %d; cause: %s); --json lists them all\n",
		len(rest), rest[0].Event, rest[len(rest)-1].Event, strings.Join(parts, ", "))
}
