package untrusted

import (
	"fmt"
	"unicode/utf8"
)

// CheckName refuses a string that Printable would have to escape: invalid
// UTF-8, a control character (C0 and C1, tab, newline and NUL included, and
// DEL), a line or paragraph separator or a bidirectional control. A
// terminal acts on these (ESC starts a sequence that can clear or retitle
// it), a log line splits at them, a C library cuts at NUL, and a reader
// sees the text around a bidi override reordered. The error names the byte
// offset of the first one: "byte 3: control character U+001B". Callers
// that turn untrusted strings into names or label values (the exporter's
// sidecars, an engine's labels) refuse them with it rather than escape
// them, so one set of characters is refused where Printable escapes it.
func CheckName(s string) error {
	i := firstUnprintable(s, false)
	if i >= len(s) {
		return nil
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n <= 1:
		return fmt.Errorf("byte %d: invalid UTF-8 (byte 0x%02x)", i, s[i])
	case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		return fmt.Errorf("byte %d: control character %U", i, r)
	default:
		return fmt.Errorf("byte %d: invisible formatting character %U (a line separator or bidi control)", i, r)
	}
}
