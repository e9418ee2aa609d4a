package untrusted

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	if got := Quote("-5"); got != `"-5"` {
		t.Errorf("Quote(-5) = %s", got)
	}
	exact := strings.Repeat("9", QuoteBytes)
	if got := Quote(exact); got != `"`+exact+`"` {
		t.Errorf("Quote of %d bytes = %s", QuoteBytes, got)
	}
	giant := strings.Repeat("9", 5_000_000)
	want := `"` + exact + `"… (5000000 bytes)`
	if got := Quote(giant); got != want {
		t.Errorf("Quote of 5 MB = %s, want %s", got, want)
	}
	if got := Clip(giant); got != exact+"… (5000000 bytes)" {
		t.Errorf("Clip of 5 MB = %s", got)
	}
	// A cut never splits a rune: 63 ASCII bytes then "é" (2 bytes).
	s := strings.Repeat("a", QuoteBytes-1) + "é" + strings.Repeat("b", 10)
	if got := Clip(s); !utf8.ValidString(got) || !strings.HasPrefix(got, strings.Repeat("a", QuoteBytes-1)+"…") {
		t.Errorf("Clip cut a rune: %q", got)
	}
	// Invalid UTF-8 and control bytes stay escaped in Quote.
	if got := Quote("\x00\xff"); got != `"\x00\xff"` {
		t.Errorf("Quote of binary = %s", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 4 << 30: "4 GiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %s, want %s", n, got, want)
		}
	}
}
