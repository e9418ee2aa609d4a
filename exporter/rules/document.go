package rules

// Document is the JSON document `gpufrag rules --json` prints (schema in
// docs/monitoring.md#per-instance-thresholds): the history read, the options
// the thresholds were derived with, and the thresholds.
type Document struct {
	History    string      `json:"history"` // the history file's name ("-": standard input)
	Format     string      `json:"format"`  // "csv" or "json", as read
	Quantile   float64     `json:"quantile"`
	Margin     float64     `json:"margin"`
	Min        float64     `json:"min"`
	Max        float64     `json:"max"`
	WindowS    float64     `json:"window_s"`
	MinPoints  int         `json:"min_points"`
	Fallback   float64     `json:"fallback"`
	Out        string      `json:"out,omitempty"` // the rules file written, if any
	Thresholds []Threshold `json:"thresholds"`
}

// NewDocument describes thresholds ts derived from history (read as format)
// under o, with the rules file written to out ("" when printed instead).
func NewDocument(history, format, out string, o Options, ts []Threshold) Document {
	return Document{
		History: history, Format: format, Quantile: o.Quantile, Margin: o.Margin,
		Min: o.Min, Max: o.Max, WindowS: o.Window, MinPoints: o.MinPoints, Fallback: o.Fallback,
		Out: out, Thresholds: ts,
	}
}
