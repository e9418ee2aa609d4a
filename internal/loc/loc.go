// Package loc formats where in an input a problem is, the one way every
// reader of the project says it: "NAME: line N: field "F": message".
// optrace and workload keep their own Error types (their kinds differ) and
// share this formatting, so a user sees the same shape from every reader.
//
// It also holds what those readers share below the format: CheckText and
// CheckJSONStart, which look at an input's first SniffBytes (Head reads
// them) and refuse what is not text, or not JSON, before a reader reads on;
// LineReader, which splits input into lines (LF, CRLF or a lone CR) under a
// line and a total limit after CheckText; and Quote and
// Clip, which echo an input value into a message in at most QuoteBytes, and
// CheckJSON, which refuses what encoding/json accepts silently in a small
// document (invalid UTF-8, repeated or case-variant keys, trailing values).
package loc

import (
	"fmt"
	"strings"
)

// Format renders name (omitted when empty), the 1-based line, the field
// (omitted when empty) and the message.
func Format(name string, line int, field, msg string) string {
	var sb strings.Builder
	if name != "" {
		sb.WriteString(name)
		sb.WriteString(": ")
	}
	fmt.Fprintf(&sb, "line %d: ", line)
	if field != "" {
		fmt.Fprintf(&sb, "field %q: ", field)
	}
	sb.WriteString(msg)
	return sb.String()
}
