package loc

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CheckText refuses a string that is not plain text: invalid UTF-8, or a
// control character (C0, DEL and C1: U+0000-U+001F and U+007F-U+009F, tab
// and newline included), which a terminal acts on (ESC starts a sequence
// that can clear or retitle it), a log line splits at, or a C library cuts
// at (NUL). The error names the byte offset of the first offending byte:
// "byte 3: control character U+001B". Callers that turn untrusted strings
// into names or label values refuse them with it, rather than escape them.
func CheckText(s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return fmt.Errorf("byte %d: invalid UTF-8 (byte 0x%02x)", i, s[i])
			}
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("byte %d: control character %U", i, r)
		}
	}
	return nil
}
