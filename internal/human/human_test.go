package human

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {512, "512B"}, {1 << 10, "1.00KiB"}, {64 << 30, "64.00GiB"}, {60483453993, "56.33GiB"}, {-3 << 20, "-3.00MiB"}, {5 << 40, "5.00TiB"}} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{{0, "0"}, {0.00085, "850µs"}, {0.432, "432ms"}, {5.4, "5.4s"}, {51.7, "51.7s"}, {518.2, "8m38s"}, {3599.6, "1h00m"}, {3600, "1h00m"}, {18051, "5h01m"}, {90061, "25h01m"}} {
		if got := Seconds(c.s); got != c.want {
			t.Errorf("Seconds(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 requests"}, {1, "1 request"}, {2, "2 requests"}, {-1, "-1 requests"}} {
		if got := Count(c.n, "request"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestClipName(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"runs/rank-0.pickle", 10, "…-0.pickle"},
		{"ääääää", 4, "…äää"},
	} {
		if got := ClipName(tc.s, tc.n); got != tc.want || len([]rune(got)) > tc.n {
			t.Errorf("ClipName(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
