package untrusted

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// FuzzLineReader checks LineReader against a plain reference: it never
// panics; the input is split at "\r\n", "\r" and "\n" after a leading BOM,
// the same whether it comes whole or a byte at a time; and it fails exactly
// when the reference says the input is binary at its start, has a line
// over the limit or is over the total limit, with an *InputError of that
// kind. Run longer with
//
//	go test ./internal/untrusted -run '^$' -fuzz FuzzLineReader -fuzztime 60s -fuzzminimizetime 1s
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\r\n", "a\rb\r", "\r\r\n\n", "\uFEFFx\n", "\x00", "\x1f\x8b", "PK\x03\x04",
		"\xff\xfe", "0123456789abcdef0123456789abcdef0123456789", "short\n0123456789abcdef0123456789abcdef\r\n",
		// issue 28: random bytes that look like text, a NUL on line 2, Latin-1, an escape sequence
		"{\x86\xad\x05\xdc\x98\x7f", "a\n\x00", "ts\r\ncaf\xe9\n", "a\n\x1b]0;x\x07\n", "caf\xc3"} {
		f.Add([]byte(s))
	}
	const maxLine, maxTotal = 32, 256
	f.Fuzz(func(t *testing.T, data []byte) {
		want, binary, long := reference(data, maxLine)
		large := len(data) > maxTotal
		for name, r := range map[string]io.Reader{"whole": bytes.NewReader(data), "bytewise": iotest.OneByteReader(bytes.NewReader(data))} {
			got, err := readAll(r, maxLine, maxTotal)
			if err == nil {
				if binary || long || large {
					t.Fatalf("%s: no error (binary %v, long line %v, too large %v)", name, binary, long, large)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %q, want %q", name, got, want)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s: line %d is %q, want %q", name, i+1, got[i], want[i])
					}
				}
				continue
			}
			var e *InputError
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("%s: error %v (%T) is not an *InputError with a line", name, err, err)
			}
			if ok := errors.Is(err, ErrBinary) && binary || errors.Is(err, ErrLineTooLong) && long ||
				errors.Is(err, ErrTooLarge) && large; !ok {
				t.Fatalf("%s: error %v, but binary %v, long line %v, too large %v", name, err, binary, long, large)
			}
		}
	})
}

var eol = regexp.MustCompile("\r\n|\r|\n")

// reference splits data into lines the simple way and tells whether
// LineReader must refuse it.
func reference(data []byte, maxLine int) (lines []string, binary, long bool) {
	head := data[:min(len(data), SniffBytes)]
	for _, m := range magics {
		binary = binary || bytes.HasPrefix(head, []byte(m.sig))
	}
	for _, c := range head {
		binary = binary || c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f
	}
	if len(data) >= SniffBytes { // more may follow: a character cut at the end is no error
		for k := 1; k <= utf8.UTFMax-1 && k <= len(head); k++ {
			if utf8.RuneStart(head[len(head)-k]) {
				if !utf8.FullRune(head[len(head)-k:]) {
					head = head[:len(head)-k]
				}
				break
			}
		}
	}
	binary = binary || !utf8.Valid(head)
	body := string(bytes.TrimPrefix(data, []byte("\uFEFF")))
	if body == "" {
		return nil, binary, false
	}
	lines = eol.Split(body, -1)
	if eol.MatchString(body[len(body)-1:]) { // a final ending ends the last line
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		long = long || len(l) > maxLine
	}
	return lines, binary, long
}
