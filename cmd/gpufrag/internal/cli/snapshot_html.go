package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/analysis/pages"
)

// writeAnalyzeHTML writes analyze's page (pages.Analyze) to path.
func writeAnalyzeHTML(path, name string, rep *analysis.Report) error {
	page, err := pages.Analyze(name, rep)
	if err != nil {
		return err
	}
	return writePage(path, page)
}

// writeDiffHTML writes the comparison of two snapshots (pages.Diff) to path.
func writeDiffHTML(path string, names []string, d *analysis.Diff) error {
	return writePage(path, pages.Diff(names, d))
}

// writeOutliersHTML writes the comparison of N snapshots (pages.Outliers)
// to path.
func writeOutliersHTML(path string, o *analysis.Outliers, vs *analysis.DeviceDiff) error {
	page, err := pages.Outliers(o, vs)
	if err != nil {
		return err
	}
	return writePage(path, page)
}

func writePage(path string, page report.Page) error {
	var out strings.Builder
	if err := page.WriteHTML(&out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}
