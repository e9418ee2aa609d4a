package cli

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/gpufrag/gpufrag/internal/progress"
)

// tableWidth is how wide, in columns, a command's tables may be on w: 0 (no
// limit: the full-width layout, byte for byte the same in every pipe and
// file) unless w is a terminal; on a terminal, COLUMNS where it is a
// positive number (as ls and many tools honour it), else the terminal's own
// width. The reports take it as their width (human.Table's Width), so the
// library decides no layout from the environment.
func tableWidth(w io.Writer) int {
	if !progress.IsTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if n, _, err := term.GetSize(int(w.(*os.File).Fd())); err == nil && n > 0 {
		return n
	}
	return 0
}
