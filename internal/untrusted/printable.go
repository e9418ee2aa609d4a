package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable renders a string read from an input (a frame's file name, a
// segment_type, a node label, a pod, stream or trace name) for a terminal,
// an HTML page, an SVG or a label, on one line: every character that could
// act instead of being read is replaced by a visible escape, so a snapshot
// from a bug report cannot clear, retitle or rewrite the terminal it is
// printed on, break an SVG's XML, or reorder the text around it. Escaped:
//
//   - the C0 controls (NUL, ESC, newline and tab included) and DEL: \n, \t,
//     \r, \a, \b, \f, \v by name, the others as \x00 ... \x1f, \x7f;
//   - the C1 controls U+0080 to U+009F (CSI, OSC, NEL...): \u0080 ... \u009f;
//   - the line and paragraph separators U+2028 and U+2029, which end a line
//     in some viewers: \u2028, \u2029;
//   - the bidirectional controls (Unicode's Bidi_Control: U+061C, U+200E,
//     U+200F, the embeddings and overrides U+202A to U+202E, the isolates
//     U+2066 to U+2069), which reorder what a reader sees around them
//     ("Trojan Source"): \u202e and so on;
//   - each byte that is not part of valid UTF-8: \xff.
//
// Everything else, other scripts, emoji and backslashes included, is kept
// as it is, and a string with nothing to escape is returned unchanged (no
// copy), so valid names print exactly as before. The result is for people:
// it is not reversible (a name that contains the four characters \x1b reads
// the same as one that contains ESC). Machine outputs keep the exact string
// (encoding/json escapes control characters itself). Printable does not cut
// its input: Quote and Clip do, for error messages.
func Printable(s string) string { return printable(s, false) }

// PrintableText is Printable for text of several lines, the report a
// command writes: newlines and tabs are kept, every other character that
// Printable escapes is escaped the same way (a carriage return too, which
// would let a line overwrite the one a reader sees).
func PrintableText(s string) string { return printable(s, true) }

// printable escapes s as Printable says, keeping '\n' and '\t' when lines.
func printable(s string, lines bool) string {
	i := firstUnprintable(s, lines)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, 'x', uint32(s[i]), 2)
		case !mustEscape(r, lines):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			if c := shortEscape(byte(r)); c != 0 {
				b.WriteByte('\\')
				b.WriteByte(c)
			} else {
				writeHex(&b, 'x', uint32(r), 2)
			}
		default:
			writeHex(&b, 'u', uint32(r), 4)
		}
		i += size
	}
	return b.String()
}

// firstUnprintable returns the index of the first byte of s that printable
// must escape, len(s) when there is none.
func firstUnprintable(s string, lines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && mustEscape(rune(c), lines) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || mustEscape(r, lines) {
			return i
		}
		i += size
	}
	return len(s)
}

// mustEscape reports whether Printable (PrintableText when lines) escapes
// the valid rune r.
func mustEscape(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f: // C1
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Bidi_Control, r)
}

// shortEscape is the letter of Go's short escape of a C0 control (\n for
// '\n'), 0 when it has none.
func shortEscape(c byte) byte {
	switch c {
	case '\a':
		return 'a'
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	case '\v':
		return 'v'
	}
	return 0
}

const hex = "0123456789abcdef"

// writeHex writes \<kind> and v in lower-case hex, digits wide.
func writeHex(b *strings.Builder, kind byte, v uint32, digits int) {
	b.WriteByte('\\')
	b.WriteByte(kind)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>uint(shift)&0xf])
	}
}

// PrintableJSON escapes, in a document encoding/json wrote, the characters
// Printable escapes that encoding/json writes as they are: DEL, the C1
// controls and the bidi controls (it escapes the C0 controls and U+2028/9
// itself), each as \u00XX or \uXXXX. JSON has them only inside strings, and
// a \u escape reads back as the same character, so the document means
// exactly what it meant, and printed on a terminal it holds no control
// character. It returns doc itself when there is nothing to escape. (A
// byte that is not UTF-8 cannot be in doc: encoding/json writes U+FFFD for
// it.)
func PrintableJSON(doc []byte) []byte {
	var out []byte // nil until a character is escaped
	done := 0      // doc[:done] is in out
	for i := 0; i < len(doc); {
		if doc[i] < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		if r != utf8.RuneError && mustEscape(r, true) {
			if out == nil {
				out = make([]byte, 0, len(doc)+16)
			}
			out = append(out, doc[done:i]...)
			out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
			done = i + size
		}
		i += size
	}
	if out == nil {
		return doc
	}
	return append(out, doc[done:]...)
}
