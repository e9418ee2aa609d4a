package testkit

import (
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
