package human

import "testing"

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
