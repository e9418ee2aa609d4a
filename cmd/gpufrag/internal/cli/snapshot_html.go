package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpufrag/gpufrag/report"
)

// writePage writes page to path (analyze's and diff's --html).
func writePage(path string, page report.Page) error {
	var out strings.Builder
	if err := page.WriteHTML(&out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}
