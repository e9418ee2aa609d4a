package pickle

import (
	"strconv"
	"unicode/utf8"
)

// Python's pickler writes a str as UTF-8 with the surrogatepass error
// handler, so a str holding a lone surrogate (U+D800 to U+DFFF) reaches
// the file as the three bytes ED A0 80 to ED BF BF, which are not UTF-8.
// Python itself makes such strs: os.fsdecode turns each byte of a file
// name that is not UTF-8 into U+DC80 to U+DCFF (surrogateescape), so a
// frame of a script under a Latin-1 directory name carries one. A Go
// string is kept valid UTF-8: each surrogate becomes the six characters
// \udcff, as Python's backslashreplace error handler writes it (and as
// repr shows it), so the name stays printable and two names that differ in
// an undecodable byte stay different. Any other invalid UTF-8 is refused.

// decodeStr returns the str whose pickled bytes are b, and false when b is
// neither UTF-8 nor UTF-8 with surrogates.
func decodeStr(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), true
	}
	out := make([]byte, 0, len(b)+len(b)/2)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			s, ok := surrogate(b)
			if !ok {
				return "", false
			}
			out = append(out, `\u`...)
			out = strconv.AppendUint(out, uint64(s), 16)
			b = b[3:]
			continue
		}
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return string(out), true
}

// surrogate decodes a surrogate at the start of b (ED A0 80 to ED BF BF,
// U+D800 to U+DFFF).
func surrogate(b []byte) (rune, bool) {
	if len(b) < 3 || b[0] != 0xed || b[1] < 0xa0 || b[1] > 0xbf || b[2] < 0x80 || b[2] > 0xbf {
		return 0, false
	}
	return 0xd000 | rune(b[1]&0x3f)<<6 | rune(b[2]&0x3f), true
}

// validStrStart reports whether b can begin a str's pickled bytes: it is
// what decodeStr accepts, except that it may end inside a character.
func validStrStart(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			b = b[n:]
			continue
		}
		if _, ok := surrogate(b); ok {
			b = b[3:]
			continue
		}
		// A cut character: a valid start of one (FullRune is false only
		// for those), or of a surrogate.
		return len(b) < utf8.UTFMax && (!utf8.FullRune(b) || (b[0] == 0xed && (len(b) == 1 || b[1] >= 0xa0 && b[1] <= 0xbf)))
	}
	return true
}
