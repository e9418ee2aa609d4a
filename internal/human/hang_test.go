package human

import (
	"strings"
	"testing"
)

func TestWrapHang(t *testing.T) {
	for _, tt := range []struct {
		text        string
		width, hang int
		want        string
	}{
		{"  caching: healthy", 80, 6, "  caching: healthy"},
		// The body is wrapped to width − hang, continuation lines indented.
		{"  a: one two three four", 14, 4, "  a: one two\n    three four"},
		{"x y", 5, 2, "x y"},
		{"", 10, 2, ""},
	} {
		if got := WrapHang(tt.text, tt.width, tt.hang); got != tt.want {
			t.Errorf("WrapHang(%q, %d, %d) = %q, want %q", tt.text, tt.width, tt.hang, got, tt.want)
		}
	}
}

func TestWrapLong(t *testing.T) {
	text := "short\n  a sentence of several words that is long\nok"
	if got := WrapLong(text, 0); got != text {
		t.Errorf("width 0: %q", got)
	}
	want := "short\n  a sentence of\n    several words that\n    is long\nok"
	if got := WrapLong(text, 22); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJoinFit(t *testing.T) {
	fields := []string{"  stream 0   106 segments", "reserved   73.02GiB", "active   68.97GiB", "health 0.139"}
	if got, want := JoinFit(fields, "  ", 0, 4), strings.Join(fields, "  "); got != want {
		t.Errorf("width 0: %q", got)
	}
	want := "  stream 0   106 segments  reserved   73.02GiB\n    active   68.97GiB  health 0.139"
	if got := JoinFit(fields, "  ", 50, 4); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
