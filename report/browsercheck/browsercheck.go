// Package browsercheck loads an HTML page written by report.Page in a real
// headless Chromium and measures what a reader would see: whether anything
// overflows the main column, where the charts' legends and marker labels
// land, and, from a screenshot, whether each legend entry's line shows in
// its chart. Tests use it (cmd/gpufrag/internal/cli's report tests, report's own); it
// needs a chromium, chromium-browser or google-chrome on PATH (Debian:
// apt-get install chromium) and nothing else: no driver, no extra Go module.
//
// A report forbids scripts (its Content-Security-Policy), so Measure loads
// a copy with the policy removed and a measuring script added at the end of
// the body; the script writes its findings as JSON into the DOM, and
// Chromium's --dump-dom brings them back.
package browsercheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Find returns the first Chromium on PATH, or "" when there is none.
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Rect is a box in CSS pixels, relative to the page's top left corner.
type Rect struct {
	X, Y, W, H float64
}

// Right is the box's right edge.
func (r Rect) Right() float64 { return r.X + r.W }

// Overlap is the area two boxes share.
func (r Rect) Overlap(o Rect) float64 {
	w := min(r.X+r.W, o.X+o.W) - max(r.X, o.X)
	h := min(r.Y+r.H, o.Y+o.H) - max(r.Y, o.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// Box is an element that may be wider than the column.
type Box struct {
	What        string // "table: Results", "pre", "figure 3"
	Rect        Rect
	ScrollWidth float64 // content width; more than Rect.W means it scrolls sideways
}

// Scrolls reports whether the box's content is wider than the box.
func (b Box) Scrolls() bool { return b.ScrollWidth > b.Rect.W+1 }

// Label is a piece of text in a chart.
type Label struct {
	Text string
	Rect Rect
}

// LegendEntry is one entry of a chart's legend: its text and the colour of
// its line swatch (#RRGGBB).
type LegendEntry struct {
	Text  string
	Color string
}

// Figure is one chart (or other SVG) of the page.
type Figure struct {
	Title        string
	Rect         Rect
	Legend       []LegendEntry
	LegendRect   Rect // zero when the chart has no legend
	MarkerLabels []Label
	// MinTextPx is the height in CSS pixels of the font of the figure's
	// smallest text as drawn (its font size times the scale the svg is
	// drawn at), and MinText that text; 0 and "" for a figure without text.
	MinTextPx float64
	MinText   string
}

// Layout is what Measure found.
type Layout struct {
	Window       int     // the window width asked for
	InnerWidth   float64 // window.innerWidth
	ScrollWidth  float64 // document.documentElement.scrollWidth
	ScrollHeight float64
	// ChartFont reports whether the charts' font, Liberation Sans or
	// Arial (same metrics), is installed: the charts lay text out with
	// its metrics, so without it labels may be wider than laid out.
	ChartFont bool
	Main      Rect // the main column's content box
	Boxes     []Box
	Figures   []Figure
}

// Overflows returns the boxes whose right edge passes the main column's.
func (l Layout) Overflows() []Box {
	var out []Box
	for _, b := range l.Boxes {
		if b.Rect.Right() > l.Main.Right()+0.5 {
			out = append(out, b)
		}
	}
	return out
}

// measureJS fills <pre id="browsercheck"> with the Layout as JSON.
const measureJS = `
(function(){
function rect(e){var r=e.getBoundingClientRect();return {X:r.left+scrollX,Y:r.top+scrollY,W:r.width,H:r.height};}
var main=document.querySelector('main')||document.body;
var cs=getComputedStyle(main), mr=rect(main);
var pl=parseFloat(cs.paddingLeft)||0, pr=parseFloat(cs.paddingRight)||0;
function has(font){var c=document.createElement('canvas').getContext('2d'),t='mmmmmmmmmmlli WWW 0123456789';
 c.font='20px monospace';var a=c.measureText(t).width;c.font="20px '"+font+"', monospace";return c.measureText(t).width!=a;}
var out={Window:0,ChartFont:has('Liberation Sans')||has('Arial'),InnerWidth:innerWidth,ScrollWidth:document.documentElement.scrollWidth,
 ScrollHeight:document.documentElement.scrollHeight,
 Main:{X:mr.X+pl,Y:mr.Y,W:mr.W-pl-pr,H:mr.H},Boxes:[],Figures:[]};
main.querySelectorAll('.table-wrap,pre,figure,table,p,h1,h2,nav').forEach(function(e,i){
 var what=e.tagName.toLowerCase();
 if(e.classList.contains('table-wrap')){var c=e.querySelector('caption');what='table: '+(c?c.textContent:'')}
 else if(what=='figure'){var t=e.querySelector('title');what='figure: '+(t?t.textContent:'')}
 else if(what=='table'){return}
 else{what+=': '+e.textContent.slice(0,40)}
 out.Boxes.push({What:what,Rect:rect(e),ScrollWidth:e.scrollWidth});
});
main.querySelectorAll('figure svg').forEach(function(svg){
 var t=svg.querySelector('title');
 var f={Title:t?t.textContent:'',Rect:rect(svg),Legend:[],LegendRect:{X:0,Y:0,W:0,H:0},MarkerLabels:[],MinTextPx:0,MinText:''};
 svg.querySelectorAll('text').forEach(function(e){
  var m=e.getScreenCTM(); if(!m||!e.textContent.trim()){return}
  var px=parseFloat(getComputedStyle(e).fontSize)*Math.hypot(m.a,m.b);
  if(!(px>0)){return}
  if(f.MinTextPx==0||px<f.MinTextPx){f.MinTextPx=px;f.MinText=e.textContent.slice(0,40)}
 });
 var lg=svg.querySelector('g.legend');
 if(lg&&lg.children.length){
  f.LegendRect=rect(lg);
  var color='';
  for(var k=0;k<lg.children.length;k++){
   var e=lg.children[k];
   if(e.tagName=='path'){color=getComputedStyle(e).stroke;}
   else if(e.tagName=='text'){
    var txt=e.textContent;
    if(/^\+\d+ more$/.test(txt)){continue}
    f.Legend.push({Text:txt,Color:color});
   }
  }
 }
 svg.querySelectorAll('g.marker-labels text').forEach(function(e){f.MarkerLabels.push({Text:e.textContent,Rect:rect(e)})});
 out.Figures.push(f);
});
var pre=document.createElement('pre');pre.id='browsercheck';pre.style.display='none';pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);
})();
`

// minWindow is the narrowest window headless Chromium lays a page out in:
// asked for less (a phone's 390 px), it lays out at 500 px and crops the
// screenshot. Measure lays a narrower page out in an iframe of that width
// instead (phoneFrame).
const minWindow = 500

// phoneFrame wraps an instrumented page in a document whose iframe is
// width CSS pixels wide, so that the page is laid out as in a window that
// narrow (its media queries see width px), and copies the measuring
// script's result out of the frame when it has loaded. The frame's srcdoc
// is the page itself, which makes it same-origin with the wrapper.
func phoneFrame(doc []byte, width, height int) []byte {
	return []byte(fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8" /><style>body{margin:0}iframe{border:0;display:block}</style></head><body>
<iframe id="page" width="%d" height="%d" srcdoc="%s"></iframe>
<script>
document.getElementById('page').addEventListener('load',function(){
 var r=this.contentDocument.getElementById('browsercheck');
 var pre=document.createElement('pre');pre.id='browsercheck';pre.style.display='none';
 pre.textContent=r?r.textContent:'';document.body.appendChild(pre);
});
</script>
</body></html>
`, width, height, html.EscapeString(string(doc))))
}

var cspMeta = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>\n?`)

// flags are the Chromium flags every run uses: headless, no sandbox (CI
// containers run as root), nothing fetched, scrollbars hidden so that the
// window's width is the layout's.
func flags(userData string, width, height int) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--mute-audio", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + userData, fmt.Sprintf("--window-size=%d,%d", width, height)}
}

// Measure loads page (an HTML file) in a window width×height CSS pixels
// and returns its layout. A width below the narrowest window headless
// Chromium lays out (500 px) is a frame of that width in a 500 px window,
// which the page cannot tell from a phone's screen. work is a directory for the instrumented copy and
// Chromium's profile. With shot not "", the same load also saves a
// screenshot of the window there (the copy differs from the page only in
// its missing policy and the hidden result), which Measure decodes and
// returns.
func Measure(ctx context.Context, browser, page, work string, width, height int, shot string) (Layout, image.Image, error) {
	l, err := measure(ctx, browser, page, work, width, height, shot)
	if err != nil || shot == "" {
		return l, nil, err
	}
	img, err := decodePNG(shot)
	return l, img, err
}

func measure(ctx context.Context, browser, page, work string, width, height int, shot string) (Layout, error) {
	src, err := os.ReadFile(page)
	if err != nil {
		return Layout{}, err
	}
	doc := cspMeta.ReplaceAll(src, nil)
	i := bytes.LastIndex(doc, []byte("</body>"))
	if i < 0 {
		return Layout{}, fmt.Errorf("%s: no </body>", page)
	}
	doc = append(doc[:i:i], append([]byte("<script>"+measureJS+"</script>\n"), doc[i:]...)...)
	window := width
	if width < minWindow {
		doc, window = phoneFrame(doc, width, height), minWindow
	}
	base := strings.TrimSuffix(filepath.Base(page), filepath.Ext(page))
	inst := filepath.Join(work, fmt.Sprintf("%s.measure-%d.html", base, width))
	if err := os.WriteFile(inst, doc, 0o644); err != nil {
		return Layout{}, err
	}
	ud, err := os.MkdirTemp(work, "chromium-")
	if err != nil {
		return Layout{}, err
	}
	defer os.RemoveAll(ud)
	args := flags(ud, window, height)
	if shot != "" {
		os.Remove(shot)
		args = append(args, "--screenshot="+shot)
	}
	args = append(args, "--dump-dom", "file://"+inst)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, browser, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Layout{}, fmt.Errorf("%s --dump-dom %s: %w\n%s", browser, inst, err, tail(stderr.String()))
	}
	dom := stdout.String()
	j := strings.Index(dom, `<pre id="browsercheck"`)
	if j < 0 {
		return Layout{}, fmt.Errorf("%s: the measuring script wrote nothing (did it run?)\n%s", inst, tail(stderr.String()))
	}
	rest := dom[j:]
	rest = rest[strings.IndexByte(rest, '>')+1:]
	k := strings.Index(rest, "</pre>")
	if k < 0 {
		return Layout{}, errors.New("browsercheck: unterminated result")
	}
	var l Layout
	if err := json.Unmarshal([]byte(html.UnescapeString(rest[:k])), &l); err != nil {
		return Layout{}, fmt.Errorf("browsercheck: result: %w", err)
	}
	l.Window = width
	for fi := range l.Figures {
		for li := range l.Figures[fi].Legend {
			l.Figures[fi].Legend[li].Color = cssColor(l.Figures[fi].Legend[li].Color)
		}
	}
	return l, nil
}

func decodePNG(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return img, nil
}

// ColorPixels counts the pixels of img inside r whose colour is within tol
// of hex (#RRGGBB) on every channel.
func ColorPixels(img image.Image, r Rect, hex string, tol int) int {
	var want [3]int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2]); err != nil {
		return 0
	}
	b := img.Bounds()
	x0, y0 := max(b.Min.X, int(r.X)), max(b.Min.Y, int(r.Y))
	x1, y1 := min(b.Max.X, int(r.X+r.W+0.5)), min(b.Max.Y, int(r.Y+r.H+0.5))
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			R, G, B, _ := img.At(x, y).RGBA()
			got := [3]int{int(R >> 8), int(G >> 8), int(B >> 8)}
			ok := true
			for c := range got {
				if d := got[c] - want[c]; d > tol || d < -tol {
					ok = false
				}
			}
			if ok {
				n++
			}
		}
	}
	return n
}

var rgbRe = regexp.MustCompile(`rgba?\((\d+),\s*(\d+),\s*(\d+)`)

// cssColor turns a computed "rgb(78, 121, 167)" into "#4e79a7".
func cssColor(s string) string {
	m := rgbRe.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	var r, g, b int
	fmt.Sscan(m[1], &r)
	fmt.Sscan(m[2], &g)
	fmt.Sscan(m[3], &b)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// Require returns the Chromium a browser test runs and the directory its
// screenshots go to ($REPORT_SCREENSHOT_DIR, created if need be, else a
// temporary directory of t), or skips t: in -short mode, and where no
// Chromium is on PATH, saying how to install one.
func Require(t testing.TB) (browser, shots string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	browser = Find()
	if browser == "" {
		t.Skip("no chromium, chromium-browser or google-chrome on PATH; install Debian's chromium (apt-get install chromium) to run this test")
	}
	shots = os.Getenv("REPORT_SCREENSHOT_DIR")
	if shots == "" {
		return browser, t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return browser, shots
}
