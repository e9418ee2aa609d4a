package analysis

import "io"

// Comparison is what `gpufrag diff` reports of its files: two side by side
// (Pair), or for three or more the outliers among their devices (Outliers)
// and the strongest outlier diffed against the device nearest the median
// (Versus; nil when no device stands out).
type Comparison struct {
	Names    []string // the files, in the order given
	Pair     *Diff
	Outliers *Outliers
	Versus   *DeviceDiff
}

// Compare compares reps, the reports of the files names: DiffReports for
// two, FindOutliers over every device of every file for more (then
// DiffDevices of the strongest outlier against the reference).
func Compare(reps []*Report, names []string, o DiffOptions) (*Comparison, error) {
	c := &Comparison{Names: names}
	if len(reps) == 2 {
		c.Pair = DiffReports(reps[0], reps[1], o)
		return c, nil
	}
	var units []Unit
	for i, r := range reps {
		for j := range r.Devices {
			units = append(units, Unit{File: names[i], Device: &r.Devices[j]})
		}
	}
	out, err := FindOutliers(units)
	if err != nil {
		return nil, err
	}
	c.Outliers = out
	if len(out.Flags) > 0 {
		d := DiffDevices(units[out.Reference].Device, units[out.Flags[0].Unit].Device, o)
		c.Versus = &d
	}
	return c, nil
}

// Doc is the `diff --json` document: DiffDoc for two files, OutliersDoc
// for more.
func (c *Comparison) Doc() any {
	if c.Pair != nil {
		return c.Pair.Doc(c.Names[0], c.Names[1])
	}
	return c.Outliers.Doc(c.Versus)
}

// WriteText writes the comparison for people (`gpufrag diff`).
func (c *Comparison) WriteText(w io.Writer) error {
	return c.WriteTextWidth(w, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): Diff.WriteTextWidth for two files,
// Outliers.WriteTextWidth for more.
func (c *Comparison) WriteTextWidth(w io.Writer, width int) error {
	if c.Pair != nil {
		return c.Pair.WriteTextWidth(w, c.Names[0], c.Names[1], width)
	}
	return c.Outliers.WriteTextWidth(w, c.Versus, width)
}
