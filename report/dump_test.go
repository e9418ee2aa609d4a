package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDump writes sample output to $REPORT_DUMP_DIR for eyeballing.
func TestDump(t *testing.T) {
	dir := os.Getenv("REPORT_DUMP_DIR")
	if dir == "" {
		t.Skip("set REPORT_DUMP_DIR to write sample outputs")
	}
	p := samplePage()
	f, err := os.Create(filepath.Join(dir, "page.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i, c := range p.Sections[0].Charts {
		svg, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "c"+string(rune('0'+i))+".svg"), svg, 0o644)
		g, _ := os.Create(filepath.Join(dir, "c"+string(rune('0'+i))+".png"))
		if err := c.PNGScaled(g, 1.5); err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
}
