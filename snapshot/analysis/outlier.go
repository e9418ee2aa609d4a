package analysis

import (
	"errors"
	"math"
	"sort"

	"github.com/gpufrag/gpufrag/internal/stats"
)

// Which of N snapshots of one job (ranks, or hours of one server) is the
// outlier, by a robust rule: for each metric, the modified z-score of
// Iglewicz and Hoaglin (1993),
//
//	z = (x − median) / scale,  scale = max(MAD / 0.6745, floor / 3.5),
//	MAD = median |x − median|,
//
// and a value is an outlier when |z| > OutlierZ (3.5). The median and the
// MAD ignore up to half the units, so one rank far off does not drag the
// yardstick with it as a mean and standard deviation would. The floor is
// the smallest difference that matters (OutlierMinShare of the median, at
// least OutlierMinBytes for bytes, half a unit for counts, OutlierMinRatio
// for a ratio): it keeps ranks that differ by a few kilobytes out of
// gigabytes from being outliers, and it is what decides when more than
// half the units share one value (the MAD is then 0, and any value that
// differs from it by more than the floor is an outlier: seven ranks alike
// and one 2 GiB heavier flag that one, as they should).
//
// The z-score says whether a difference is significant, not how much it
// matters: a metric on which the healthy ranks agree closely turns any
// small difference into a huge z, and z-scores of different metrics are
// not comparable. So the outliers are ranked by the memory at stake (the
// bytes the difference from the median stands for, OutlierMetric.Stake),
// the largest first, and |z| only breaks ties. Eight generated ranks, one
// leaking 1.2 GiB from one call site: ranked by |z|, a healthy rank whose
// largest free block was 190 MiB above the median (z +11.1, health z
// +11.5) came before the leak (allocated z +8.4); by bytes at stake the
// leak comes first (TestOutliersLeakFirst).

// OutlierRule states the rule in a sentence, for the reports.
const OutlierRule = "modified z-score (x − median)/max(MAD/0.6745, floor/3.5) (Iglewicz-Hoaglin); an outlier has |z| > 3.5, " +
	"so it differs from the median by more than 3.5 robust deviations and by more than the floor: " +
	"1% of the median and 1 MiB for bytes, 1% and one for counts, 0.01 for health"

// Outlier rule constants.
const (
	// OutlierZ is the |modified z-score| above which a value is an
	// outlier: Iglewicz and Hoaglin's recommended 3.5.
	OutlierZ = 3.5
	// madScale makes the MAD estimate a normal sample's standard deviation
	// (Φ⁻¹(0.75) = 0.6745).
	madScale = 0.6745
	// OutlierMinShare: a byte or count metric must differ from the median
	// by more than 1% of it.
	OutlierMinShare = 0.01
	// OutlierMinBytes: and a byte metric by more than 1 MiB, the
	// granularity of the caching allocator's large blocks below which no
	// request is held apart.
	OutlierMinBytes = 1 << 20
	// OutlierMinCount: and a count by more than half of one.
	OutlierMinCount = 0.5
	// OutlierMinRatio: a ratio (health) must differ by more than 0.01.
	OutlierMinRatio = 0.01
	// MinOutlierUnits is the fewest units the rule takes: with two, the
	// median is their mean and neither is more typical.
	MinOutlierUnits = 3
)

// ErrFewUnits: FindOutliers was given fewer than MinOutlierUnits units.
var ErrFewUnits = errors.New("analysis: outliers need at least 3 snapshot devices")

// Unit is one device of one snapshot, compared with the others.
type Unit struct {
	File   string
	Device *Device
}

// OutlierMetric is one metric the rule compares.
type OutlierMetric struct {
	Name  string // JSON name: reserved_bytes, health...
	Ratio bool   // a ratio in [0, 1]; else bytes or a count
	Bytes bool   // bytes (printed as sizes)
	Of    func(*Device) float64
	// Stake is the memory at stake, in bytes, when the device's value
	// differs from the median by dev (value − median); nil for a byte
	// metric, whose stake is |dev| itself.
	Stake func(d *Device, dev float64) float64
}

// OutlierMetrics are the metrics compared, in the order reports show them.
var OutlierMetrics = []OutlierMetric{
	{"reserved_bytes", false, true, func(d *Device) float64 { return float64(d.Classes.Reserved) }, nil},
	{"allocated_bytes", false, true, func(d *Device) float64 { return float64(d.Classes.Allocated) }, nil},
	{"cached_free_bytes", false, true, func(d *Device) float64 { return float64(d.Classes.CachedFree) }, nil},
	{"stranded_free_bytes", false, true, func(d *Device) float64 { return float64(d.Classes.Stranded) }, nil},
	{"internal_waste_bytes", false, true, func(d *Device) float64 { return float64(d.Classes.InternalWaste) }, nil},
	{"largest_free_block_bytes", false, true, func(d *Device) float64 { return float64(d.Metrics.LargestFreeBlock) }, nil},
	// Health is largest free block ÷ cached free: a difference of dev
	// stands for |dev| × cached free bytes, the free bytes that would have
	// to join (or leave) the largest block for the health to be the
	// median's.
	{"health", true, false, func(d *Device) float64 { return d.Metrics.Health },
		func(d *Device, dev float64) float64 { return math.Abs(dev) * float64(d.Classes.CachedFree) }},
	// A segment more or fewer stands for the device's mean segment size.
	{"segments", false, false, func(d *Device) float64 { return float64(d.Segments) },
		func(d *Device, dev float64) float64 {
			if d.Segments == 0 {
				return 0
			}
			return math.Abs(dev) * float64(d.Classes.Reserved) / float64(d.Segments)
		}},
	// An out-of-memory entry more or fewer stands for the device's mean
	// failed request (0 for a device without one).
	{"ooms", false, false, func(d *Device) float64 { return float64(len(d.OOMs)) },
		func(d *Device, dev float64) float64 {
			if len(d.OOMs) == 0 {
				return 0
			}
			var sum float64
			for _, o := range d.OOMs {
				sum += float64(o.Requested)
			}
			return math.Abs(dev) * sum / float64(len(d.OOMs))
		}},
}

// Outliers is the comparison of N units.
type Outliers struct {
	Units []Unit
	// Values[u][m] is unit u's value of OutlierMetrics[m]; Z its score.
	Values, Z [][]float64
	Median    []float64 // per metric
	MAD       []float64 // per metric
	// Flags are the (unit, metric) outliers, the most bytes at stake
	// first, then the largest |z|; Flags[0] is the strongest outlier.
	Flags []OutlierFlag
	// Reference is the unit nearest the median (least Σ|z|, then the
	// first): the one to compare an outlier with.
	Reference int
}

// OutlierFlag is one unit's outlying metric.
type OutlierFlag struct {
	Unit, Metric int
	Value        float64
	Z            float64
	// Stake is the memory at stake in bytes: |value − median| for a byte
	// metric, what the difference stands for otherwise (OutlierMetric.Stake).
	Stake int64
}

// FindOutliers applies the rule to units.
func FindOutliers(units []Unit) (*Outliers, error) {
	if len(units) < MinOutlierUnits {
		return nil, ErrFewUnits
	}
	o := &Outliers{Units: units, Values: make([][]float64, len(units)), Z: make([][]float64, len(units))}
	for u, un := range units {
		o.Values[u] = make([]float64, len(OutlierMetrics))
		o.Z[u] = make([]float64, len(OutlierMetrics))
		for m, met := range OutlierMetrics {
			o.Values[u][m] = met.Of(un.Device)
		}
	}
	for m, met := range OutlierMetrics {
		col := make([]float64, len(units))
		for u := range units {
			col[u] = o.Values[u][m]
		}
		med := stats.Median(col)
		dev := make([]float64, len(col))
		for i, x := range col {
			dev[i] = math.Abs(x - med)
		}
		mad := stats.Median(dev)
		o.Median = append(o.Median, med)
		o.MAD = append(o.MAD, mad)
		floor := OutlierMinRatio
		switch {
		case met.Bytes:
			floor = max(OutlierMinShare*math.Abs(med), OutlierMinBytes)
		case !met.Ratio:
			floor = max(OutlierMinShare*math.Abs(med), OutlierMinCount)
		}
		scale := max(mad/madScale, floor/OutlierZ)
		for u, x := range col {
			z := (x - med) / scale
			o.Z[u][m] = z
			if math.Abs(z) > OutlierZ {
				stake := math.Abs(x - med)
				if met.Stake != nil {
					stake = met.Stake(units[u].Device, x-med)
				}
				if !(stake >= 0) { // NaN from a hostile file's values
					stake = 0
				}
				o.Flags = append(o.Flags, OutlierFlag{Unit: u, Metric: m, Value: x, Z: z, Stake: int64(min(math.Round(stake), 1<<62))})
			}
		}
	}
	sort.SliceStable(o.Flags, func(i, j int) bool {
		if a, b := o.Flags[i].Stake, o.Flags[j].Stake; a != b {
			return a > b
		}
		return math.Abs(o.Flags[i].Z) > math.Abs(o.Flags[j].Z)
	})
	best := math.Inf(1)
	for u := range units {
		var sum float64
		for _, z := range o.Z[u] {
			sum += math.Abs(z)
		}
		if sum < best {
			best, o.Reference = sum, u
		}
	}
	return o, nil
}
