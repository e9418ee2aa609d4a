// Package human formats figures for people: the byte sizes and durations of
// the command line's tables and of the sentences that the --json documents
// carry (a recommendation's reason), so that text and JSON say the same.
package human

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gpufrag/gpufrag/mem"
)

// Bytes prints n in the largest binary unit it reaches, always with two
// decimals so that table columns align: "56.33GiB", "64.00GiB", "512B".
func Bytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", mem.TiB}, {"GiB", mem.GiB}, {"MiB", mem.MiB}, {"KiB", mem.KiB}} {
		if n >= u.size || -n >= u.size {
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 2, 64) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Seconds prints a duration given in seconds with the precision a reader
// needs at its scale: "0", "850µs", "432ms", "5.4s", "8m38s", "5h01m";
// past a minute it reads as minutes and hours, not as a count of seconds
// ("18051s" is 5h01m).
func Seconds(s float64) string {
	d := time.Duration(s * 1e9)
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case d < time.Second:
		return fmt.Sprintf("%.0fms", s*1e3)
	case d < 100*time.Second:
		return fmt.Sprintf("%.1fs", s)
	case d.Round(time.Second) < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
}

// Count is n and the noun, plural unless n is 1: "1 request", "3 requests".
// noun is the singular, made plural by adding an s.
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
