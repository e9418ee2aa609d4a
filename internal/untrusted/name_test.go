package untrusted

import "testing"

func TestCheckName(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "",
		"vllm-0":                   "",
		"meta-llama/Llama-3-8B":    "",
		"модель \u00e9 \U0001F600": "",
		"\uFFFD is a character":    "", // written as such, not decoded from a bad byte
		"\u00a0 no-break space":    "",
		"a\u2028b":                 "byte 1: invisible formatting character U+2028 (a line separator or bidi control)",
		"\u202eevil":               "byte 0: invisible formatting character U+202E (a line separator or bidi control)",
		"a\x00b":                   "byte 1: control character U+0000",
		"\x1b]0;pwned\x07":         "byte 0: control character U+001B",
		"line\nbreak":              "byte 4: control character U+000A",
		"tab\t":                    "byte 3: control character U+0009",
		"del\x7f":                  "byte 3: control character U+007F",
		"c1 \u0085":                "byte 3: control character U+0085",
		"ok\xffno":                 "byte 2: invalid UTF-8 (byte 0xff)",
		"\xed\xa0\x80":             "byte 0: invalid UTF-8 (byte 0xed)", // an encoded surrogate
		"cut \xe2\x82":             "byte 4: invalid UTF-8 (byte 0xe2)",
	} {
		err := CheckName(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckName(%q) = %v, want nil", in, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("CheckName(%q) = %v, want %s", in, err, want)
		}
	}
}
