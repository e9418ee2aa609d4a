package human

import (
	"strings"
	"unicode/utf8"
)

// WrapHang wraps a note to width runes with its continuation lines
// indented by hang spaces; the note's own leading spaces stay on its first
// line ("  caching: ..." wrapped under a hang of 6).
func WrapHang(text string, width, hang int) string {
	body := strings.TrimLeft(text, " ")
	lead := len(text) - len(body)
	lines := strings.Split(Wrap(body, width-hang), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = strings.Repeat(" ", lead) + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", hang) + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// WrapLong wraps each line of text longer than width runes at its spaces,
// its further lines indented two more than its own (WrapHang); shorter
// lines, and every line when width is 0 (no limit), stay as they are.
func WrapLong(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if utf8.RuneCountInString(line) > width {
			lead := len(line) - len(strings.TrimLeft(line, " "))
			lines[i] = WrapHang(line, width, lead+2)
		}
	}
	return strings.Join(lines, "\n")
}

// JoinFit joins the fields of a line with sep; where the line is longer
// than width runes (0: no limit), the fields that do not fit go on further
// lines indented by hang spaces, each field whole, so that lines built
// from the same fields break at the same places.
func JoinFit(fields []string, sep string, width, hang int) string {
	line := strings.Join(fields, sep)
	if width <= 0 || utf8.RuneCountInString(line) <= width {
		return line
	}
	var sb strings.Builder
	n := 0
	for i, f := range fields {
		l := utf8.RuneCountInString(f)
		switch {
		case i == 0:
		case n+len(sep)+l > width:
			sb.WriteString("\n" + strings.Repeat(" ", hang))
			n = hang
			f = strings.TrimLeft(f, " ")
			l = utf8.RuneCountInString(f)
		default:
			sb.WriteString(sep)
			n += len(sep)
		}
		sb.WriteString(f)
		n += l
	}
	return sb.String()
}
