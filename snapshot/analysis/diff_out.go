package analysis

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// DiffDoc is the JSON document of `gpufrag diff A B --json`; docs/json.md
// ("gpufrag diff") is its schema. Field names are stable; new fields may
// be added. Every byte delta is B − A.
type DiffDoc struct {
	A       string          `json:"a"`
	B       string          `json:"b"`
	Devices []DeviceDiffDoc `json:"devices"`
}

// DeviceDiffDoc is one device pair. A device only one snapshot has has
// a null side.
type DeviceDiffDoc struct {
	DeviceA *int     `json:"device_a"`
	DeviceB *int     `json:"device_b"`
	A       *SideDoc `json:"a"`
	B       *SideDoc `json:"b"`
	// Segments are matched by address and size.
	KeptSegments     int             `json:"kept_segments"`
	ResizedSegments  int             `json:"resized_segments"`
	Resized          []ResizeDoc     `json:"resized"`
	AppearedSegments int             `json:"appeared_segments"`
	AppearedBytes    int64           `json:"appeared_bytes"`
	VanishedSegments int             `json:"vanished_segments"`
	VanishedBytes    int64           `json:"vanished_bytes"`
	Appeared         []SegmentRefDoc `json:"appeared"`
	Vanished         []SegmentRefDoc `json:"vanished"`
	SegmentSizes     []SizeCountDoc  `json:"segment_sizes"`
	SitesChanged     int             `json:"sites_changed"`
	Sites            []SiteDeltaDoc  `json:"sites"`
}

// SideDoc is one device's figures in a diff.
type SideDoc struct {
	Segments              int      `json:"segments"`
	Blocks                int      `json:"blocks"`
	ReservedBytes         int64    `json:"reserved_bytes"`
	AllocatedBytes        int64    `json:"allocated_bytes"`
	RequestedBytes        int64    `json:"requested_bytes"`
	ActiveBytes           int64    `json:"active_bytes"`
	CachedFreeBytes       int64    `json:"cached_free_bytes"`
	InternalWasteBytes    int64    `json:"internal_waste_bytes"`
	StrandedFreeBytes     int64    `json:"stranded_free_bytes"`
	Health                float64  `json:"health"`
	FragRate              float64  `json:"frag_rate"`
	LargestFreeBlockBytes int64    `json:"largest_free_block_bytes"`
	MaxAllocatableBytes   int64    `json:"max_allocatable_bytes"`
	SizeEntropyBits       float64  `json:"size_entropy_bits"`
	DistinctSizes         int      `json:"distinct_sizes"`
	CapacityBytes         int64    `json:"capacity_bytes"`
	TraceEvents           int      `json:"trace_events"`
	OOMs                  []OOMDoc `json:"ooms"`
}

// SegmentRefDoc is a segment that appeared or vanished.
type SegmentRefDoc struct {
	Address   string `json:"address"` // hex
	SizeBytes int64  `json:"size_bytes"`
	Pool      string `json:"pool"`
	LiveBytes int64  `json:"live_bytes"`
}

// ResizeDoc is a segment at one address in both, of another size.
type ResizeDoc struct {
	Address    string `json:"address"` // hex
	Pool       string `json:"pool"`
	SizeABytes int64  `json:"size_a_bytes"`
	SizeBBytes int64  `json:"size_b_bytes"`
}

// SizeCountDoc is a segment size whose count differs.
type SizeCountDoc struct {
	SizeBytes int64 `json:"size_bytes"`
	A         int   `json:"a"`
	B         int   `json:"b"`
}

// SiteDeltaDoc is one site whose memory moved.
type SiteDeltaDoc struct {
	Site           string      `json:"site"`
	HeldDeltaBytes int64       `json:"held_delta_bytes"`
	A              SiteStatDoc `json:"a"`
	B              SiteStatDoc `json:"b"`
}

func sideDoc(d *Device) *SideDoc {
	if d == nil {
		return nil
	}
	c, m := d.Classes, d.Metrics
	s := &SideDoc{Segments: d.Segments, Blocks: d.Blocks, ReservedBytes: c.Reserved, AllocatedBytes: c.Allocated,
		RequestedBytes: c.Requested, ActiveBytes: c.Active, CachedFreeBytes: c.CachedFree, InternalWasteBytes: c.InternalWaste,
		StrandedFreeBytes: c.Stranded, Health: m.Health, FragRate: m.FragRate, LargestFreeBlockBytes: m.LargestFreeBlock,
		MaxAllocatableBytes: m.MaxAllocatable, SizeEntropyBits: m.SizeEntropy, DistinctSizes: m.DistinctSizes, CapacityBytes: d.Capacity, TraceEvents: d.TraceEvents, OOMs: []OOMDoc{}}
	for _, o := range d.OOMs {
		s.OOMs = append(s.OOMs, oomDoc(o))
	}
	return s
}

// Doc returns the diff as its JSON document; a and b name the inputs.
func (d *Diff) Doc(a, b string) DiffDoc {
	doc := DiffDoc{A: a, B: b, Devices: []DeviceDiffDoc{}}
	for _, dd := range d.Devices {
		doc.Devices = append(doc.Devices, dd.doc())
	}
	return doc
}

func (d DeviceDiff) doc() DeviceDiffDoc {
	out := DeviceDiffDoc{A: sideDoc(d.A), B: sideDoc(d.B), KeptSegments: d.Kept, ResizedSegments: d.ResizedCount, Resized: []ResizeDoc{},
		AppearedSegments: d.AppearedCount, AppearedBytes: d.AppearedBytes, VanishedSegments: d.VanishedCount,
		VanishedBytes: d.VanishedBytes, Appeared: []SegmentRefDoc{}, Vanished: []SegmentRefDoc{},
		SegmentSizes: []SizeCountDoc{}, SitesChanged: d.SitesChanged, Sites: []SiteDeltaDoc{}}
	if d.A != nil {
		out.DeviceA = &d.A.Device
	}
	if d.B != nil {
		out.DeviceB = &d.B.Device
	}
	ref := func(s SegmentRef) SegmentRefDoc {
		return SegmentRefDoc{Address: fmt.Sprintf("%#x", s.Address), SizeBytes: s.Size, Pool: s.Pool, LiveBytes: s.Live}
	}
	for _, r := range d.Resized {
		out.Resized = append(out.Resized, ResizeDoc{Address: fmt.Sprintf("%#x", r.Address), Pool: r.Pool, SizeABytes: r.SizeA, SizeBBytes: r.SizeB})
	}
	for _, s := range d.Appeared {
		out.Appeared = append(out.Appeared, ref(s))
	}
	for _, s := range d.Vanished {
		out.Vanished = append(out.Vanished, ref(s))
	}
	for _, s := range d.Sizes {
		out.SegmentSizes = append(out.SegmentSizes, SizeCountDoc{SizeBytes: s.Size, A: s.A, B: s.B})
	}
	for _, s := range d.Sites {
		a, b := s.A.doc(), s.B.doc()
		a.Site, b.Site = s.Site, s.Site
		out.Sites = append(out.Sites, SiteDeltaDoc{Site: s.Site, HeldDeltaBytes: s.HeldDelta(), A: a, B: b})
	}
	return out
}

// signed prints a byte delta with its sign ("+2MiB", "-512KiB", "0B").
func signed(n int64) string {
	switch {
	case n > 0:
		return "+" + fb(n)
	case n < 0:
		return "-" + fb(-n)
	}
	return "0B"
}

// change prints the relative change of b over a, or "" when a is 0.
func change(a, b int64) string {
	if a == 0 || a == b {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", 100*(float64(b)-float64(a))/float64(a))
}

// WriteText writes the diff for people; a and b name the inputs.
func (d *Diff) WriteText(w io.Writer, a, b string) error {
	return d.WriteTextWidth(w, a, b, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): a sentence or a listed segment longer
// than width wraps at its spaces (human.WrapLong), and where a site does
// not fit beside its figures the sites go on lines of their own under
// them (writeSites). The table of memory classes and metrics (76 columns)
// and that of segment sizes keep their fixed columns.
func (d *Diff) WriteTextWidth(w io.Writer, a, b string, width int) error {
	var sb strings.Builder
	sb.WriteString(human.WrapLong(fmt.Sprintf("A: %s\nB: %s\n", untrusted.Printable(a), untrusted.Printable(b)), width))
	for _, dd := range d.Devices {
		dd.writeText(&sb, width)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeText writes one device pair's comparison; width is the terminal's
// (0: no limit), as in Diff.WriteTextWidth.
func (d DeviceDiff) writeText(b *strings.Builder, width int) {
	wrap := func(format string, args ...any) { b.WriteString(human.WrapLong(fmt.Sprintf(format, args...), width)) }
	name := func(x *Device) string {
		if x == nil {
			return "absent"
		}
		return fmt.Sprintf("device %d", x.Device)
	}
	fmt.Fprintf(b, "\n== A %s vs B %s\n", name(d.A), name(d.B))
	if d.Same() {
		wrap("\n  No difference: the same segments, memory classes and allocation sites.\n")
	}
	var za, zb Device
	a, bb := &za, &zb
	if d.A != nil {
		a = d.A
	}
	if d.B != nil {
		bb = d.B
	}
	fmt.Fprintf(b, "\n  %-26s %12s %12s %12s\n", "", "A", "B", "B − A")
	row := func(label string, x, y int64) {
		line := fmt.Sprintf("  %-26s %12s %12s %12s %8s", label, fb(x), fb(y), signed(y-x), change(x, y))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	count := func(label string, x, y int) {
		fmt.Fprintf(b, "  %-26s %12d %12d %+12d\n", label, x, y, y-x)
	}
	ratio := func(label string, x, y float64) {
		fmt.Fprintf(b, "  %-26s %12.3f %12.3f %+12.3f\n", label, x, y, y-x)
	}
	ca, cb := a.Classes, bb.Classes
	row("reserved", ca.Reserved, cb.Reserved)
	row("allocated", ca.Allocated, cb.Allocated)
	row("requested", ca.Requested, cb.Requested)
	row("active", ca.Active, cb.Active)
	row("cached free", ca.CachedFree, cb.CachedFree)
	row("rounding waste", ca.InternalWaste, cb.InternalWaste)
	row("stranded free", ca.Stranded, cb.Stranded)
	ratio("health (largest/cached)", a.Metrics.Health, bb.Metrics.Health)
	ratio("frag rate", a.Metrics.FragRate, bb.Metrics.FragRate)
	row("largest free block", a.Metrics.LargestFreeBlock, bb.Metrics.LargestFreeBlock)
	row("max allocatable", a.Metrics.MaxAllocatable, bb.Metrics.MaxAllocatable)
	count("distinct live sizes", a.Metrics.DistinctSizes, bb.Metrics.DistinctSizes)
	ratio("size entropy (bits)", a.Metrics.SizeEntropy, bb.Metrics.SizeEntropy)
	count("segments", a.Segments, bb.Segments)
	count("blocks", a.Blocks, bb.Blocks)
	count("trace events", a.TraceEvents, bb.TraceEvents)
	count("OOM entries", len(a.OOMs), len(bb.OOMs))

	resized := ""
	if d.ResizedCount > 0 {
		resized = fmt.Sprintf(", %d resized (same address)", d.ResizedCount)
	}
	wrap("\nSegments (same address and size = the same segment): %d in both, %d appeared (%s), %d vanished (%s)%s\n",
		d.Kept, d.AppearedCount, fb(d.AppearedBytes), d.VanishedCount, fb(d.VanishedBytes), resized)
	for _, r := range d.Resized {
		wrap("  %-9s %-16s %10s %-8s was %s\n", "resized", fmt.Sprintf("%#x", r.Address), fb(r.SizeB), untrusted.Printable(r.Pool), fb(r.SizeA))
	}
	if n := d.ResizedCount - len(d.Resized); n > 0 {
		fmt.Fprintf(b, "  %-9s +%d more\n", "resized", n)
	}
	list := func(verb string, segs []SegmentRef, total int) {
		for _, s := range segs {
			wrap("  %-9s %-16s %10s %-8s live %s\n", verb, fmt.Sprintf("%#x", s.Address), fb(s.Size), untrusted.Printable(s.Pool), fb(s.Live))
		}
		if n := total - len(segs); n > 0 {
			fmt.Fprintf(b, "  %-9s +%d smaller\n", verb, n)
		}
	}
	list("appeared", d.Appeared, d.AppearedCount)
	list("vanished", d.Vanished, d.VanishedCount)
	if len(d.Sizes) > 0 {
		wrap("\nSegment sizes whose count changed (address-free: what compares across processes)\n")
		fmt.Fprintf(b, "  %10s %6s %6s %7s\n", "size", "A", "B", "B − A")
		for i, s := range d.Sizes {
			if i == 20 {
				fmt.Fprintf(b, "  +%d more sizes (--json lists them all)\n", len(d.Sizes)-i)
				break
			}
			fmt.Fprintf(b, "  %10s %6d %6d %+7d\n", fb(s.Size), s.A, s.B, s.B-s.A)
		}
	}
	if len(d.Sites) > 0 {
		wrap("\nAllocation sites whose memory moved most (held = allocated + stranded free; %d moved)\n", d.SitesChanged)
		writeSites(b, d.Sites, width)
	}
	for _, side := range []struct {
		name string
		d    *Device
	}{{"A", d.A}, {"B", d.B}} {
		if side.d == nil {
			continue
		}
		listed, more := textOOMs(side.d.OOMs)
		for _, o := range listed {
			wrap("\n%s: out of memory at event %d: requested %s, device free %s; %s: %s\n  at: %s\n", side.name,
				o.Event, fb(o.Requested), fb(o.DeviceFree), o.Cause, o.Why, untrusted.Printable(siteOf(o.Frames)))
		}
		if more != "" {
			wrap("\n%s: %s", side.name, strings.TrimPrefix(more, "\n"))
		}
	}
}

// OutliersDoc is the JSON document of `gpufrag diff` with three or more
// snapshots (docs/json.md, "gpufrag diff").
type OutliersDoc struct {
	Rule      OutlierRuleDoc   `json:"rule"`
	Metrics   []string         `json:"metrics"`
	Median    []float64        `json:"median"`
	MAD       []float64        `json:"mad"`
	Units     []UnitDoc        `json:"units"`
	Outliers  []OutlierFlagDoc `json:"outliers"`
	Reference UnitRefDoc       `json:"reference"`
	// VsReference compares the strongest outlier with the reference; nil
	// when no unit is an outlier.
	VsReference *DeviceDiffDoc `json:"vs_reference,omitempty"`
}

// OutlierRuleDoc states the rule's constants.
type OutlierRuleDoc struct {
	Score    string  `json:"score"`
	MaxAbsZ  float64 `json:"max_abs_z"`
	MinShare float64 `json:"min_share"`
	MinBytes int64   `json:"min_bytes"`
	MinCount float64 `json:"min_count"`
	MinRatio float64 `json:"min_ratio"`
}

// UnitRefDoc names a unit.
type UnitRefDoc struct {
	File   string `json:"file"`
	Device int    `json:"device"`
}

// UnitDoc is one unit's values and scores, in the order of Metrics.
type UnitDoc struct {
	UnitRefDoc
	Values  []float64 `json:"values"`
	Z       []float64 `json:"z"`
	Outlier bool      `json:"outlier"`
}

// OutlierFlagDoc is one outlying value.
type OutlierFlagDoc struct {
	UnitRefDoc
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Median float64 `json:"median"`
	Z      float64 `json:"z"`
	// StakeBytes is the memory the difference puts at stake
	// (OutlierFlag.Stake), by which the list is ordered.
	StakeBytes int64 `json:"stake_bytes"`
}

func (o *Outliers) ref(u int) UnitRefDoc {
	return UnitRefDoc{File: o.Units[u].File, Device: o.Units[u].Device.Device}
}

// Doc returns the comparison as its JSON document; vs is the strongest
// outlier's diff against the reference (nil for none).
func (o *Outliers) Doc(vs *DeviceDiff) OutliersDoc {
	doc := OutliersDoc{Rule: OutlierRuleDoc{Score: OutlierRule,
		MaxAbsZ: OutlierZ, MinShare: OutlierMinShare, MinBytes: OutlierMinBytes, MinCount: OutlierMinCount, MinRatio: OutlierMinRatio},
		Median: o.Median, MAD: o.MAD, Units: []UnitDoc{}, Outliers: []OutlierFlagDoc{}, Reference: o.ref(o.Reference)}
	for _, m := range OutlierMetrics {
		doc.Metrics = append(doc.Metrics, m.Name)
	}
	flagged := map[int]bool{}
	for _, f := range o.Flags {
		flagged[f.Unit] = true
		doc.Outliers = append(doc.Outliers, OutlierFlagDoc{UnitRefDoc: o.ref(f.Unit), Metric: OutlierMetrics[f.Metric].Name,
			Value: f.Value, Median: o.Median[f.Metric], Z: round3(f.Z), StakeBytes: f.Stake})
	}
	for u := range o.Units {
		z := make([]float64, len(o.Z[u]))
		for i, v := range o.Z[u] {
			z[i] = round3(v)
		}
		doc.Units = append(doc.Units, UnitDoc{UnitRefDoc: o.ref(u), Values: o.Values[u], Z: z, Outlier: flagged[u]})
	}
	if vs != nil {
		dd := vs.doc()
		doc.VsReference = &dd
	}
	return doc
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// WriteText writes the comparison for people: one row per unit, the
// median, the outliers and, when there is one, the strongest outlier's
// diff against the reference unit.
func (o *Outliers) WriteText(w io.Writer, vs *DeviceDiff) error {
	return o.WriteTextWidth(w, vs, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): where the table's fixed columns (126
// characters) do not fit, its columns are as wide as their headings and
// cells through human.Table, which stacks each unit's name over its
// figures where they do not fit beside it; a sentence longer than width
// wraps at its spaces (human.WrapLong); the diff against the reference as
// Diff.WriteTextWidth.
func (o *Outliers) WriteTextWidth(w io.Writer, vs *DeviceDiff, width int) error {
	var b strings.Builder
	b.WriteString(human.WrapLong(fmt.Sprintf("%d snapshot devices compared. An outlier has |z| > %.1f, z = (x − median) / max(MAD/0.6745, floor/3.5)\n"+
		"(Iglewicz-Hoaglin's modified z-score; floor: 1%% of the median and 1 MiB for bytes, 1%% and one for counts, 0.01 for health).\n\n",
		len(o.Units), OutlierZ), width))
	o.writeTable(&b, width)
	wrap := func(format string, args ...any) { b.WriteString(human.WrapLong(fmt.Sprintf(format, args...), width)) }
	if len(o.Flags) == 0 {
		b.WriteString("\nNo outlier: every value is within the rule of its median.\n")
	} else {
		b.WriteString("\nOutliers (* above), the most memory at stake first\n")
		for _, f := range o.Flags {
			m := OutlierMetrics[f.Metric]
			wrap("  %s device %d: %s %s, median %s (%s at stake, z %+.1f)\n", untrusted.Printable(o.Units[f.Unit].File),
				o.Units[f.Unit].Device.Device, m.Name, o.value(f.Metric, f.Value), o.value(f.Metric, o.Median[f.Metric]), fb(f.Stake), f.Z)
		}
	}
	ref := o.Units[o.Reference]
	wrap("\nReference (nearest the median): %s device %d\n", untrusted.Printable(ref.File), ref.Device.Device)
	if vs != nil {
		out := o.Units[o.Flags[0].Unit]
		wrap("\nThe strongest outlier against the reference: A = %s, B = %s\n", untrusted.Printable(ref.File), untrusted.Printable(out.File))
		vs.writeText(&b, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// outlierColumns are the metrics the text's table shows: reserved,
// allocated, stranded, rounding, health, segments, OOMs.
var outlierColumns = []int{0, 1, 3, 4, 6, 7, 8}

// value prints metric m's value v as the text shows it.
func (o *Outliers) value(m int, v float64) string {
	switch {
	case OutlierMetrics[m].Bytes:
		return fb(int64(v))
	case OutlierMetrics[m].Ratio:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// writeTable writes the table of every unit's values, a flagged one marked
// "*", and the median: fixed columns (126 characters), or on a terminal
// narrower than them (width; 0 is no limit) a human.Table within it.
func (o *Outliers) writeTable(b *strings.Builder, width int) {
	flagged := map[[2]int]bool{}
	for _, f := range o.Flags {
		flagged[[2]int{f.Unit, f.Metric}] = true
	}
	head := []string{"snapshot (device)"}
	for _, m := range outlierColumns {
		head = append(head, shortMetric[m])
	}
	rows := [][]string{}
	for u, un := range o.Units {
		row := []string{human.ClipName(fmt.Sprintf("%s (%d)", untrusted.Printable(un.File), un.Device.Device), 40)}
		for _, m := range outlierColumns {
			v := o.value(m, o.Values[u][m])
			if flagged[[2]int{u, m}] {
				v += "*"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	median := []string{"median"}
	for _, m := range outlierColumns {
		median = append(median, o.value(m, o.Median[m]))
	}
	rows = append(rows, median)

	var wide strings.Builder
	for _, row := range append([][]string{head}, rows...) {
		fmt.Fprintf(&wide, "  %-40s", row[0])
		for _, v := range row[1:] {
			fmt.Fprintf(&wide, " %11s", v)
		}
		wide.WriteString("\n")
	}
	if width <= 0 || human.Widest(wide.String()) <= width {
		b.WriteString(wide.String())
		return
	}
	writeIndented(b, human.Table{Head: head, Rows: rows, Width: width - 2})
}

var shortMetric = []string{"reserved", "allocated", "cached free", "stranded", "rounding", "largest free", "health", "segments", "OOMs"}

// writeSites writes the table of the sites whose memory moved: six
// figures (71 columns) and the site. On a terminal width columns wide (0:
// no limit) where a site does not fit beside its figures, every site goes
// on a line of its own under them, indented by 4, as analyze's attribution
// table does, and so does the column's heading; a site longer than that
// line (a whole stack, --full-stacks) wraps at its spaces, and a word
// longer than the line keeps its end (human.ClipName).
func writeSites(b *strings.Builder, sites []SiteDelta, width int) {
	const figures = "  %11s %11s %11s %11s %10s %10s"
	head := fmt.Sprintf(figures, "Δheld", "Δallocated", "Δstranded", "Δrounding", "A held", "B held")
	col := utf8.RuneCountInString(head) + 2 // where the site column starts
	beside := width <= 0 || col+len("site") <= width
	for _, s := range sites {
		beside = beside && (width <= 0 || col+utf8.RuneCountInString(untrusted.Printable(s.Site)) <= width)
	}
	under := func(name string) string {
		room := max(width-siteUnderIndent-2, siteNameMin)
		words := strings.Fields(name)
		for i, w := range words {
			words[i] = human.ClipName(w, room)
		}
		return human.WrapHang(strings.Repeat(" ", siteUnderIndent)+strings.Join(words, " "), width, siteUnderIndent+2)
	}
	if beside {
		fmt.Fprintf(b, "%s  %s\n", head, "site")
	} else {
		fmt.Fprintf(b, "%s\n%s\n", head, under("site"))
	}
	for _, s := range sites {
		line := fmt.Sprintf(figures, signed(s.HeldDelta()), signed(s.B.Allocated-s.A.Allocated),
			signed(s.B.Stranded-s.A.Stranded), signed(s.B.Rounding-s.A.Rounding), fb(s.A.Held()), fb(s.B.Held()))
		if beside {
			fmt.Fprintf(b, "%s  %s\n", line, untrusted.Printable(s.Site))
		} else {
			fmt.Fprintf(b, "%s\n%s\n", line, under(untrusted.Printable(s.Site)))
		}
	}
}

// siteUnderIndent indents a site printed under its figures (writeSites).
const siteUnderIndent = 4
