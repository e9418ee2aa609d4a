package human

import "strings"

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
