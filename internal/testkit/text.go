package testkit

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// WidestLine returns the width in characters of text's longest line and
// the line, for tests that check a text fits a terminal's columns.
func WidestLine(text string) (int, string) {
	n, widest := 0, ""
	for _, line := range strings.Split(text, "\n") {
		if c := utf8.RuneCountInString(line); c > n {
			n, widest = c, line
		}
	}
	return n, widest
}

// Words returns text's words sorted, without the dash runs of a table's
// group labels (which stretch with their columns): the figures and names
// a report must keep whole however a terminal's width lays it out.
func Words(text string) []string {
	w := slices.DeleteFunc(strings.Fields(text), func(f string) bool { return strings.Trim(f, "-") == "" })
	slices.Sort(w)
	return w
}
