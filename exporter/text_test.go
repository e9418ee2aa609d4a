package exporter

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// writeText renders gathered families in the text exposition format, for
// golden files.
func writeText(w io.Writer, fams []*dto.MetricFamily) error {
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// metricLine renders one collected metric as name{labels} value.
func metricLine(t *testing.T, m prometheus.Metric) string {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	desc := m.Desc().String()
	name := desc[strings.Index(desc, `fqName: "`)+len(`fqName: "`):]
	name = name[:strings.Index(name, `"`)]
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte('{')
	for i, l := range pb.GetLabel() {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(l.GetName() + `="` + l.GetValue() + `"`)
	}
	sb.WriteString("} ")
	switch {
	case pb.Gauge != nil:
		sb.WriteString(fmtFloat(pb.GetGauge().GetValue()))
	case pb.Counter != nil:
		sb.WriteString(fmtFloat(pb.GetCounter().GetValue()))
	}
	return sb.String()
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
