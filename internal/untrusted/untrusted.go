// Package untrusted holds what every reader of untrusted input shares. It
// formats where in an input a problem is, the one way every
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
// document (invalid UTF-8, repeated or case-variant keys, lone escaped
// surrogates, trailing values).
//
// Printable (PrintableText for text of several lines) is the one sanitiser
// of every string from an input that reaches a terminal, an HTML page, an
// SVG or a label: control characters, bidi controls and invalid UTF-8
// become visible escapes (\x1b, \u202e, \xff). CheckName refuses the same
// characters in a string about to become a name or a label value.
//
// CheckText is LineReader's look at the first bytes for readers of a whole
// document, and CheckYAML bounds the values a YAML document decodes into,
// aliases expanded, before it is decoded (MaxYAMLNodes).
package untrusted

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
