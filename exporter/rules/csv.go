package rules

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// csvHeader is the optional first row of a CSV history.
var csvHeader = []string{"timestamp", "instance", "model", "health"}

// ReadCSV reads a history from rows "timestamp,instance,model,health":
// timestamp in Unix seconds (fractions allowed) or RFC 3339, instance
// non-empty, model possibly empty, health a number in [0, 1]. The first row
// may be that header; lines starting with # are comments. Rows may come in
// any order, but one (instance, model) may not have two rows with the same
// timestamp. Errors name the file, line, column and field.
func ReadCSV(name string, r io.Reader) (*History, error) {
	return ReadCSVOptions(name, r, ReadOptions{})
}

// ReadCSVOptions is ReadCSV with limits.
func ReadCSVOptions(name string, r io.Reader, o ReadOptions) (*History, error) {
	maxSeries := o.maxSeries()
	data, err := readLimited(name, r, false)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = len(csvHeader)
	cr.Comment = '#'
	cr.ReuseRecord = true

	type row struct {
		p    Point
		line int
	}
	groups := map[key][]row{}
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(err, csv.ErrQuote) {
			// The record's line: encoding/csv names where it gave up, the
			// end of the file for a quote never closed.
			return nil, fmt.Errorf("%s:%d: %w: a quoted field is not closed on its line (a field cannot hold a line break)", name, pe.StartLine, pe.Err)
		}
		if errors.As(err, &pe) && errors.Is(err, csv.ErrFieldCount) {
			// encoding/csv's "record on line N: wrong number of fields"
			// said neither how many nor which.
			return nil, fmt.Errorf("%s:%d: %d fields, want %d: %s (an optional header row; # comments)",
				name, pe.StartLine, len(rec), len(csvHeader), strings.Join(csvHeader, ","))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		at := func(i int) string {
			line, col := cr.FieldPos(i)
			return fmt.Sprintf("%s:%d:%d: %s", name, line, col, csvHeader[i])
		}
		if first && isHeader(rec) {
			continue
		}
		for i, f := range rec {
			if !utf8.ValidString(f) {
				return nil, fmt.Errorf("%s: not valid UTF-8", at(i))
			}
			if strings.ContainsAny(f, "\r\n") {
				return nil, fmt.Errorf("%s: holds a line break (a quoted field cannot span lines)", at(i))
			}
		}
		ts, err := parseTimestamp(rec[0])
		if err != nil {
			if first {
				return nil, fmt.Errorf("%s: %w (the header, if any, must be %s)", at(0), err, strings.Join(csvHeader, ","))
			}
			return nil, fmt.Errorf("%s: %w", at(0), err)
		}
		if rec[1] == "" {
			return nil, fmt.Errorf("%s: empty", at(1))
		}
		for i := 1; i <= 2; i++ {
			if len(rec[i]) > MaxLabelBytes {
				return nil, fmt.Errorf("%s: %d bytes, over %d", at(i), len(rec[i]), MaxLabelBytes)
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[3]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a number", at(3), untrusted.Quote(rec[3]))
		}
		if err := checkHealth(v); err != nil {
			return nil, fmt.Errorf("%s: %w", at(3), err)
		}
		line, _ := cr.FieldPos(0)
		k := key{rec[1], rec[2]}
		if _, ok := groups[k]; !ok && len(groups) == maxSeries {
			return nil, fmt.Errorf("%s:%d: %w: more than %d (instance, model) series", name, line, ErrTooManySeries, maxSeries)
		}
		groups[k] = append(groups[k], row{Point{Time: ts, Health: v}, line})
	}

	h := &History{}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.instance, b.instance), cmp.Compare(a.model, b.model))
	})
	for _, k := range keys {
		rows := groups[k]
		slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.p.Time, b.p.Time) })
		pts := make([]Point, len(rows))
		for i, r := range rows {
			if i > 0 && r.p.Time == rows[i-1].p.Time {
				a, b := min(r.line, rows[i-1].line), max(r.line, rows[i-1].line)
				return nil, fmt.Errorf("%s:%d: timestamp: instance %s model %s already has a row at %v (line %d)",
					name, b, untrusted.Quote(k.instance), untrusted.Quote(k.model), r.p.Time, a)
			}
			pts[i] = r.p
		}
		labels := map[string]string{"instance": k.instance}
		if k.model != "" {
			labels["model"] = k.model
		}
		h.Series = append(h.Series, Series{Labels: labels, Points: pts})
	}
	sortSeries(h.Series)
	return h, nil
}

func isHeader(rec []string) bool {
	for i, f := range rec {
		if !strings.EqualFold(strings.TrimSpace(f), csvHeader[i]) {
			return false
		}
	}
	return true
}

// parseTimestamp reads Unix seconds or an RFC 3339 time.
func parseTimestamp(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v != v || v > 1e11 || v < -1e11 {
			return 0, fmt.Errorf("%s is not a plausible Unix time in seconds", untrusted.Quote(s))
		}
		return v, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%s is neither Unix seconds nor RFC 3339", untrusted.Quote(s))
	}
	return float64(t.UnixNano()) / 1e9, nil
}
