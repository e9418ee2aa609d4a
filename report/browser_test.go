package report

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/report/browsercheck"
)

// TestBrowserRender renders the sample page in headless Chromium and
// checks that the screenshot shows the charts. It is skipped when no
// Chromium is installed (Debian: apt-get install chromium). Set
// REPORT_SCREENSHOT_DIR to keep the page and the screenshot.
func TestBrowserRender(t *testing.T) {
	browser, dir := browsercheck.Require(t)
	page := filepath.Join(dir, "page.html")
	shot := filepath.Join(dir, "screenshot.png")
	os.Remove(shot)
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := samplePage().WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--window-size=1100,1800", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	sf, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	img, err := png.Decode(sf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Fatalf("screenshot is %v", b)
	}
	// Not blank: many non-white pixels, and the two first series colours
	// (blue, orange) drawn by the inlined SVG are present.
	nonWhite, blue, orange := 0, 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl := rgb(img, x, y)
			if r < 240 || g < 240 || bl < 240 {
				nonWhite++
			}
			if near(r, 0x4e) && near(g, 0x79) && near(bl, 0xa7) {
				blue++
			}
			if near(r, 0xf2) && near(g, 0x8e) && near(bl, 0x2b) {
				orange++
			}
		}
	}
	t.Logf("screenshot %v: %d non-white, %d blue, %d orange pixels", b, nonWhite, blue, orange)
	if nonWhite < b.Dx()*b.Dy()/50 {
		t.Errorf("screenshot looks blank: %d non-white pixels", nonWhite)
	}
	if blue < 500 || orange < 500 {
		t.Errorf("chart lines missing: %d blue, %d orange pixels", blue, orange)
	}
}

func rgb(img image.Image, x, y int) (r, g, b int) {
	R, G, B, _ := img.At(x, y).RGBA()
	return int(R >> 8), int(G >> 8), int(B >> 8)
}

func near(a, b int) bool { return a-b <= 12 && b-a <= 12 }
