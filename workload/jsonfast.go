// The JSON fast path: the lines of real traces, read without
// encoding/json's decoder. See object and hashes in json.go.

package workload

import (
	"encoding/json"
	"math"
)

// fastObject fills m (cleared first) with the known keys of the JSON object
// t and their raw values, as object does, for the lines real traces hold:
// keys without escapes, values that are numbers, strings without escapes,
// true, false, null or arrays of numbers, JSON whitespace between. It
// reports false, with m in any state, for everything else: an escape, a
// nested object, a duplicate known key, an unknown key under strict,
// anything malformed; object then reads the line and gives its result or
// its error, so the fast path changes neither (FuzzFastObject). Values
// alias t.
func fastObject(t []byte, known []string, strict bool, m map[string]json.RawMessage) bool {
	clear(m)
	i := 0
	ws := func() {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
			i++
		}
	}
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	i = 1
	ws()
	if i < len(t) && t[i] == '}' {
		i++
		return i == len(t)
	}
	for {
		// A key: a string without escapes or control characters.
		if i >= len(t) || t[i] != '"' {
			return false
		}
		start := i + 1
		end := scanString(t, i)
		if end < 0 {
			return false
		}
		key := t[start : end-1]
		i = end
		ws()
		if i >= len(t) || t[i] != ':' {
			return false
		}
		i++
		ws()
		vstart := i
		if i = scanValue(t, i); i < 0 {
			return false
		}
		k := -1
		for j, name := range known {
			if string(key) == name {
				k = j
				break
			}
		}
		switch {
		case k >= 0:
			if _, dup := m[known[k]]; dup {
				return false
			}
			m[known[k]] = t[vstart:i]
		case strict:
			return false
		}
		ws()
		if i >= len(t) {
			return false
		}
		switch t[i] {
		case ',':
			i++
			ws()
		case '}':
			return i+1 == len(t)
		default:
			return false
		}
	}
}

// scanString returns the index past the string that starts at t[i] ('"'),
// or -1 where it has an escape or a control character or does not end.
func scanString(t []byte, i int) int {
	for i++; i < len(t); i++ {
		switch c := t[i]; {
		case c == '"':
			return i + 1
		case c == '\\' || c < 0x20:
			return -1
		}
	}
	return -1
}

// scanValue returns the index past the value that starts at t[i], or -1
// (see fastObject for the values it takes).
func scanValue(t []byte, i int) int {
	if i >= len(t) {
		return -1
	}
	switch c := t[i]; {
	case c == '"':
		return scanString(t, i)
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(t, i)
	case c == '[':
		i++
		for {
			for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
				i++
			}
			if i < len(t) && t[i] == ']' {
				return i + 1
			}
			if i = scanNumber(t, i); i < 0 {
				return -1
			}
			for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
				i++
			}
			if i >= len(t) {
				return -1
			}
			if t[i] == ']' {
				return i + 1
			}
			if t[i] != ',' {
				return -1
			}
			i++
			// "[1,]" is not JSON: a number must follow the comma.
			for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
				i++
			}
			if i < len(t) && t[i] == ']' {
				return -1
			}
		}
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(t)-i >= len(lit) && string(t[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}

// scanNumber returns the index past the JSON number that starts at t[i],
// or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(t []byte, i int) int {
	digits := func() bool {
		s := i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(t) && t[i] == '-' {
		i++
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case !digits():
		return -1
	}
	if i < len(t) && t[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if !digits() {
			return -1
		}
	}
	return i
}

// fastIDs parses a JSON list of non-negative integers as json.Unmarshal
// into []uint64 does, for lists of plain integers; false for anything else
// (a fraction, an exponent, a sign, an overflow, a non-list), which
// json.Unmarshal then reads. An empty list is a non-nil empty slice.
func fastIDs(raw []byte) ([]uint64, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	n := 0
	for _, c := range raw {
		if c == ',' {
			n++
		}
	}
	ids := make([]uint64, 0, n+1)
	var x uint64
	in := false // inside a number
	for _, c := range raw[1 : len(raw)-1] {
		switch {
		case c >= '0' && c <= '9':
			if in && x == 0 { // a leading zero: not JSON
				return nil, false
			}
			d := uint64(c - '0')
			if x > (math.MaxUint64-d)/10 {
				return nil, false
			}
			x, in = x*10+d, true
		case c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				ids, x, in = append(ids, x), 0, false
			}
		default:
			return nil, false
		}
	}
	if in {
		ids = append(ids, x)
	}
	return ids, true
}
