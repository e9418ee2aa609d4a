// Format detection from a file's first line. See package workload for the
// overview.

package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

var bom = []byte("\uFEFF")

// Detect tells the format from a file's first line (further lines, a BOM
// and the line ending are ignored; the line may end in LF, CRLF or CR). A
// JSON object with "input_length" is Mooncake, one with "prompt_tokens" is
// our JSONL; a CSV header is matched on its columns: ContextTokens is
// Azure, num_prefill_tokens is Vidur, input_length is FineServe, "Request
// tokens" is BurstGPT. A header with a format's columns that repeats one of
// them is an error wrapping ErrColumn that names the column and both
// positions; anything else is an error wrapping ErrFormat that lists what
// each format's header holds.
func Detect(header []byte) (Format, error) {
	f, e := detect(header)
	if e != nil {
		return Auto, fmt.Errorf("%w: %s", e.Err, e.Msg)
	}
	return f, nil
}

// detect is Detect with an *Error (without its line) for Read.
func detect(header []byte) (Format, *Error) {
	if i := bytes.IndexAny(header, "\r\n"); i >= 0 {
		header = header[:i]
	}
	header = bytes.TrimPrefix(header, bom)
	trimmed := bytes.TrimSpace(header)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &m); err != nil {
			if isJSONPrefix(trimmed) {
				return Auto, &Error{Err: ErrFormat, Msg: "the first line opens a JSON object that goes on past the line (one document over " +
					`several lines, as a pretty-printer writes): a JSONL trace holds one object per line, with "prompt_tokens" (jsonl) or ` +
					`"input_length" (mooncake); a benchmark result is recognised from "backend" and "request_rate" in its first 4 KiB`}
			}
			return Auto, &Error{Err: ErrFormat, Msg: "the first line starts like JSON but is not a JSON object: " + err.Error()}
		}
		switch {
		case m["prompt_tokens"] != nil:
			return JSONL, nil
		case m["input_length"] != nil:
			return Mooncake, nil
		}
		return Auto, &Error{Err: ErrFormat, Msg: `a JSON object without "prompt_tokens" (jsonl) or "input_length" (mooncake)`}
	}
	cols, err := splitCSV(header)
	if err != nil {
		return Auto, &Error{Err: ErrFormat, Msg: fmt.Sprintf("cannot tell the format from the first line %s: %v", clip(string(header)), err)}
	}
	for _, f := range csvFormats {
		s := csvSpecs[f]
		if s.present(cols) < len(s.requiredCols()) {
			continue
		}
		if _, e := s.index(cols); e != nil { // every column is there, one twice
			return Auto, e
		}
		return f, nil
	}
	return Auto, &Error{Err: ErrFormat, Msg: unknownHeader(header, cols)}
}

// csvFormats is the order Detect tries the CSV formats in.
var csvFormats = []Format{Azure, Vidur, FineServe, BurstGPT}

// unknownHeader explains a first line that matches no format: the format
// it comes closest to and what it lacks, and what every format expects.
func unknownHeader(header []byte, cols []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "cannot tell the format from the first line %s", clip(string(header)))
	best, bestN := Auto, 0
	for _, f := range csvFormats {
		if n := csvSpecs[f].present(cols); n > bestN {
			best, bestN = f, n
		}
	}
	if best != Auto {
		s := csvSpecs[best]
		var lack []string
		for _, c := range s.requiredCols() {
			if !hasColumn(cols, c) {
				lack = append(lack, c)
			}
		}
		fmt.Fprintf(&sb, ": it looks like %v but lacks %s", best, strings.Join(lack, ", "))
	}
	sb.WriteString("; a header needs the columns of one format (")
	for i, f := range csvFormats {
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%v: %s", f, strings.Join(csvSpecs[f].requiredCols(), ","))
	}
	sb.WriteString(`), or a JSONL line is an object with "prompt_tokens" (jsonl) or "input_length" (mooncake); or give the format with --format`)
	return sb.String()
}

// hasColumn reports whether header holds column c, matched as csvSpec does.
func hasColumn(header []string, c string) bool {
	for _, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), c) {
			return true
		}
	}
	return false
}

// isJSONPrefix reports whether b is the start of a JSON text that ends too
// soon: decoding it stops at its end (io.ErrUnexpectedEOF), not at a bad
// byte within it.
func isJSONPrefix(b []byte) bool {
	var v any
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}
