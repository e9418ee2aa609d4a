package untrusted

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// QuoteBytes is how much of an input value Quote echoes (64 bytes): enough
// to recognise a number, a time or a name, short enough that a 5 MB field
// does not flood a terminal or a log line.
const QuoteBytes = 64

// Quote renders an input value for an error message: Go-quoted, cut to its
// first QuoteBytes bytes (at a UTF-8 boundary) with "… (N bytes)" after the
// closing quote when it was longer, so every reader echoes bad values the
// same bounded way, for example
//
//	"99999999999999999999999999999999999999999999999999999999999999999"… (5000000 bytes)
func Quote(s string) string {
	cut, more := clipAt(s)
	return strconv.Quote(s[:cut]) + more
}

// Clip is Quote without the quotes, for values that are already names (a
// JSON key, a column): the first QuoteBytes bytes through Printable, and
// "… (N bytes)".
func Clip(s string) string {
	cut, more := clipAt(s)
	return Printable(s[:cut]) + more
}

// clipAt returns where to cut s (a rune boundary at most QuoteBytes in) and
// the suffix that says how long s was; s itself and "" when it is short.
func clipAt(s string) (int, string) {
	if len(s) <= QuoteBytes {
		return len(s), ""
	}
	cut := QuoteBytes
	for cut > QuoteBytes-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut, fmt.Sprintf("… (%d bytes)", len(s))
}

// Size renders a byte limit for a message: "1 MiB", "4 GiB", or "N bytes"
// when it is not a whole number of KiB, MiB or GiB.
func Size(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// DescribeJSONStart names what an input that should be a JSON object starts
// with, from its first bytes (at least the first one; 16 are enough): "a NUL
// byte (binary data, not JSON)", "an array", "null", "a string", "a
// boolean", "a number", or the bytes themselves, quoted.
func DescribeJSONStart(head []byte) string {
	if len(head) == 0 {
		return "nothing"
	}
	c := head[0]
	switch {
	case c == 0:
		return "a NUL byte (binary data, not JSON)"
	case c == '[':
		return "an array"
	case bytes.HasPrefix(head, []byte("null")):
		return "null"
	case c == '"':
		return "a string"
	case bytes.HasPrefix(head, []byte("true")) || bytes.HasPrefix(head, []byte("false")):
		return "a boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return Quote(string(head))
}
