package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"io"
	"strconv"
)

// ReadPrometheusJSON reads the response body of a Prometheus range query
// (GET /api/v1/query_range), as saved with
//
//	curl -sG http://prometheus:9090/api/v1/query_range \
//	  --data-urlencode query=gpufrag_health_ratio \
//	  --data-urlencode start=2026-11-23T00:00:00Z \
//	  --data-urlencode end=2026-11-30T00:00:00Z \
//	  --data-urlencode step=60 > history.json
//
// The document must have status "success" and resultType "matrix". A series
// whose __name__ is gpufrag_fragmentation_ratio is read as 1 − value; one
// named gpufrag_health_ratio, or with no __name__ (an aggregation such as
// min by (instance, model) (gpufrag_health_ratio)), as health; any other name
// is an error. Unknown fields, duplicate keys, non-finite values, values
// outside [0, 1], timestamps that do not increase and native histograms are
// errors; name is used in messages, which give line, column, byte offset and
// the JSON path of the field.
func ReadPrometheusJSON(name string, r io.Reader) (*History, error) {
	return ReadPrometheusJSONOptions(name, r, ReadOptions{})
}

// ReadPrometheusJSONOptions is ReadPrometheusJSON with limits.
func ReadPrometheusJSONOptions(name string, r io.Reader, o ReadOptions) (*History, error) {
	data, err := readLimited(name, r, true)
	if err != nil {
		return nil, err
	}
	p := &jsonParser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data)), maxSeries: o.maxSeries()}
	p.dec.UseNumber()
	h, err := p.document()
	if err != nil {
		return nil, err
	}
	sortSeries(h.Series)
	return h, nil
}

type jsonParser struct {
	name      string
	data      []byte
	dec       *json.Decoder
	maxSeries int
}

// errAt formats an error at byte offset off about field.
func (p *jsonParser) errAt(off int64, field, format string, args ...any) error {
	line, col := position(p.data, off)
	return fmt.Errorf("%s:%d:%d (byte %d): %s: %s", p.name, line, col, off, field, fmt.Sprintf(format, args...))
}

// wrapAt wraps err at byte offset off about field.
func (p *jsonParser) wrapAt(off int64, field string, err error) error {
	line, col := position(p.data, off)
	return fmt.Errorf("%s:%d:%d (byte %d): %s: %w", p.name, line, col, off, field, err)
}

// next returns the next token and the offset where it starts.
func (p *jsonParser) next(field string) (json.Token, int64, error) {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			at := max(se.Offset-1, 0) // Offset counts the offending byte
			return nil, at, p.wrapAt(at, field, err)
		case errors.Is(err, io.EOF):
			return nil, off, p.errAt(off, field, "unexpected end of document")
		}
		return nil, off, p.wrapAt(off, field, err)
	}
	return tok, off, nil
}

// delim reads the delimiter want.
func (p *jsonParser) delim(field string, want json.Delim) (int64, error) {
	tok, off, err := p.next(field)
	if err != nil {
		return off, err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return off, p.errAt(off, field, "want %q, got %s", string(want), describe(tok))
	}
	return off, nil
}

// str reads a string.
func (p *jsonParser) str(field string) (string, int64, error) {
	tok, off, err := p.next(field)
	if err != nil {
		return "", off, err
	}
	s, ok := tok.(string)
	if !ok {
		return "", off, p.errAt(off, field, "want a string, got %s", describe(tok))
	}
	return s, off, nil
}

// object reads an object, calling member for each key (after checking it is
// not a duplicate); member must consume the value.
func (p *jsonParser) object(field string, member func(k string, koff int64) error) (int64, error) {
	start, err := p.delim(field, '{')
	if err != nil {
		return start, err
	}
	seen := map[string]bool{}
	for p.dec.More() {
		k, koff, err := p.str(field + " key")
		if err != nil {
			return start, err
		}
		if seen[k] {
			return start, p.errAt(koff, field, "duplicate key %s", untrusted.Quote(k))
		}
		seen[k] = true
		if err := member(k, koff); err != nil {
			return start, err
		}
	}
	_, err = p.delim(field, '}')
	return start, err
}

// skip consumes one value of any shape.
func (p *jsonParser) skip(field string) error {
	depth := 0
	for {
		tok, _, err := p.next(field)
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return "string " + untrusted.Quote(v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func (p *jsonParser) document() (*History, error) {
	var (
		h                    History
		status, errType, msg string
		haveData             bool
	)
	start, err := p.object("document", func(k string, koff int64) error {
		var err error
		switch k {
		case "status":
			status, _, err = p.str("status")
		case "errorType":
			errType, _, err = p.str("errorType")
		case "error":
			msg, _, err = p.str("error")
		case "warnings", "infos":
			err = p.skip(k)
		case "data":
			haveData = true
			err = p.dataObject(&h)
		default:
			err = p.errAt(koff, "document", "unknown field %s (want status, data, warnings, infos, errorType, error)", untrusted.Quote(k))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if tok, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		off := p.dec.InputOffset()
		if err != nil {
			return nil, p.wrapAt(off, "document", err)
		}
		return nil, p.errAt(off, "document", "unexpected %s after the document", describe(tok))
	}
	switch {
	case status == "error":
		return nil, p.errAt(start, "status", "the query failed: %s: %s", untrusted.Clip(errType), untrusted.Clip(msg))
	case status != "success":
		return nil, p.errAt(start, "status", "want \"success\", got %s", untrusted.Quote(status))
	case !haveData:
		return nil, p.errAt(start, "data", "missing")
	}
	return &h, nil
}

func (p *jsonParser) dataObject(h *History) error {
	var resultType string
	haveResult := false
	start, err := p.object("data", func(k string, koff int64) error {
		var err error
		switch k {
		case "resultType":
			var off int64
			resultType, off, err = p.str("data.resultType")
			if err == nil && resultType != "matrix" {
				err = p.errAt(off, "data.resultType", "want \"matrix\" (a range query, /api/v1/query_range), got %s", untrusted.Quote(resultType))
			}
		case "result":
			haveResult = true
			err = p.result(h)
		case "stats":
			err = p.skip("data.stats")
		default:
			err = p.errAt(koff, "data", "unknown field %s (want resultType, result, stats)", untrusted.Quote(k))
		}
		return err
	})
	if err != nil {
		return err
	}
	if resultType == "" {
		return p.errAt(start, "data.resultType", "missing")
	}
	if !haveResult {
		return p.errAt(start, "data.result", "missing")
	}
	return nil
}

func (p *jsonParser) result(h *History) error {
	if _, err := p.delim("data.result", '['); err != nil {
		return err
	}
	seen := map[string]int{}
	for i := 0; p.dec.More(); i++ {
		field := fmt.Sprintf("data.result[%d]", i)
		if i == p.maxSeries {
			return p.wrapAt(p.dec.InputOffset(), field, fmt.Errorf("%w: more than %d series", ErrTooManySeries, p.maxSeries))
		}
		s, off, err := p.series(field)
		if err != nil {
			return err
		}
		ls := labelString(s.Labels)
		if j, dup := seen[ls]; dup {
			return p.errAt(off, field, "series %s repeats data.result[%d] (query health or fragmentation, not both)", ls, j)
		}
		seen[ls] = i
		h.Series = append(h.Series, s)
	}
	_, err := p.delim("data.result", ']')
	return err
}

func (p *jsonParser) series(field string) (Series, int64, error) {
	var (
		s          Series
		metricName string
		nameOff    int64
		values     []Point
		offs       []int64
		haveMetric bool
		haveValues bool
	)
	start, err := p.object(field, func(k string, koff int64) error {
		switch k {
		case "metric":
			haveMetric = true
			s.Labels = map[string]string{}
			_, err := p.object(field+".metric", func(name string, noff int64) error {
				v, voff, err := p.str(field + ".metric." + name)
				if err != nil {
					return err
				}
				if name == "__name__" {
					metricName, nameOff = v, voff
					return nil
				}
				if !validLabelName(name) {
					return p.errAt(noff, field+".metric", "%s is not a label name", untrusted.Quote(name))
				}
				if len(v) > MaxLabelBytes {
					return p.errAt(voff, field+".metric."+name, "label value of %d bytes, over %d", len(v), MaxLabelBytes)
				}
				s.Labels[name] = v
				return nil
			})
			return err
		case "values":
			haveValues = true
			var err error
			values, offs, err = p.values(field + ".values")
			return err
		case "histograms":
			return p.errAt(koff, field+".histograms", "native histograms are not health values: query gpufrag_health_ratio")
		default:
			return p.errAt(koff, field, "unknown field %s (want metric, values)", untrusted.Quote(k))
		}
	})
	if err != nil {
		return s, start, err
	}
	if !haveMetric {
		return s, start, p.errAt(start, field+".metric", "missing")
	}
	if !haveValues {
		return s, start, p.errAt(start, field+".values", "missing")
	}
	invert := false
	switch metricName {
	case "", HealthMetric:
	case FragmentationMetric:
		invert = true
	default:
		return s, start, p.errAt(nameOff, field+".metric.__name__", "want %s or %s, got %s", HealthMetric, FragmentationMetric, untrusted.Quote(metricName))
	}
	for j := range values {
		if invert {
			values[j].Health = 1 - values[j].Health
		}
		if j > 0 && values[j].Time <= values[j-1].Time {
			return s, start, p.errAt(offs[j], fmt.Sprintf("%s[%d][0]", field+".values", j),
				"timestamp %v does not follow %v", values[j].Time, values[j-1].Time)
		}
	}
	s.Points = values
	return s, start, nil
}

// values reads [[ts, "v"], ...] and returns the points and each pair's offset.
func (p *jsonParser) values(field string) ([]Point, []int64, error) {
	if _, err := p.delim(field, '['); err != nil {
		return nil, nil, err
	}
	var (
		pts  []Point
		offs []int64
	)
	for j := 0; p.dec.More(); j++ {
		f := fmt.Sprintf("%s[%d]", field, j)
		off, err := p.delim(f, '[')
		if err != nil {
			return nil, nil, err
		}
		tok, toff, err := p.next(f + "[0]")
		if err != nil {
			return nil, nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, nil, p.errAt(toff, f+"[0]", "want a timestamp (a number of seconds), got %s", describe(tok))
		}
		ts, err := strconv.ParseFloat(num.String(), 64)
		if err != nil {
			return nil, nil, p.wrapAt(toff, f+"[0]", err)
		}
		vs, voff, err := p.str(f + "[1]")
		if err != nil {
			return nil, nil, err
		}
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, nil, p.errAt(voff, f+"[1]", "%s is not a number", untrusted.Quote(vs))
		}
		if err := checkHealth(v); err != nil {
			return nil, nil, p.wrapAt(voff, f+"[1]", err)
		}
		if _, err := p.delim(f, ']'); err != nil {
			return nil, nil, err
		}
		pts = append(pts, Point{Time: ts, Health: v})
		offs = append(offs, off)
	}
	if _, err := p.delim(field, ']'); err != nil {
		return nil, nil, err
	}
	return pts, offs, nil
}
