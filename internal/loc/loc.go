// Package loc formats where in an input a problem is, the one way every
// reader of the project says it: "NAME: line N: field "F": message".
// optrace and workload keep their own Error types (their kinds differ) and
// share this formatting, so a user sees the same shape from every reader.
//
// It also holds what those readers share below the format: LineReader,
// which splits input into lines (LF, CRLF or a lone CR) under a line and a
// total limit and refuses binary input at its first bytes, and Quote and
// Clip, which echo an input value into a message in at most QuoteBytes, and
// CheckJSON, which refuses what encoding/json accepts silently in a small
// document (invalid UTF-8, repeated or case-variant keys, lone escaped
// surrogates, trailing values), and CheckText, which refuses a string that
// is not plain text (invalid UTF-8, control characters) before it becomes a
// name or a label value.
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
