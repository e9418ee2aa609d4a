package untrusted

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckText: a whole-document reader (config.json) names UTF-16, a
// compressed file or binary data as LineReader does, instead of a JSON
// syntax error about 'ÿ'; a UTF-8 byte order mark is text, and TrimBOM
// drops it.
func TestCheckText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\xff\xfe{\x00\"\x00", "UTF-16 text: convert it to UTF-8 first"},
		{"\xfe\xff\x00{", "UTF-16 text"},
		{"\x1f\x8b\x08", "gzip-compressed data"},
		{"{\"a\": 1,\x00}", "byte 8 is NUL"},
		{"\uFEFF{\"a\": 1}", ""},
		{"{\"a\": 1}", ""},
		{"", ""},
	} {
		err := CheckText([]byte(c.in), true)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.in, err)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrBinary) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an ErrBinary naming %q", c.in, err, c.want)
		}
	}
	if got := string(TrimBOM([]byte("\uFEFF{}"))); got != "{}" {
		t.Errorf("TrimBOM: %q", got)
	}
}
