package analysis

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// AttributionDoc is a device's attribution in `gpufrag analyze --json`
// (docs/json.md, "attribution").
type AttributionDoc struct {
	// Stacks is "collapsed" (rows per call site) or "full" (rows per
	// whole stack).
	Stacks string `json:"stacks"`
	// Sites are the rows, heaviest first (allocated + stranded).
	Sites []SiteStatDoc `json:"sites"`
	// Other sums the rows left out (Options.TopSites); nil when none is.
	Other *SiteStatDoc `json:"other,omitempty"`
	Total SiteStatDoc  `json:"total"`
}

// SiteStatDoc is one row of AttributionDoc.
type SiteStatDoc struct {
	Site string `json:"site"`
	// Stack is the row's stack, innermost first ("file.py:123 function"
	// each), when the row has one stack; absent otherwise.
	Stack          []string `json:"stack,omitempty"`
	Blocks         int      `json:"blocks"`
	Segments       int      `json:"segments"`
	AllocatedBytes int64    `json:"allocated_bytes"`
	RequestedBytes int64    `json:"requested_bytes"`
	RoundingBytes  int64    `json:"rounding_bytes"`
	StrandedBytes  int64    `json:"stranded_free_bytes"`
}

func (s SiteStat) doc() SiteStatDoc {
	d := SiteStatDoc{Site: s.Site, Blocks: s.Blocks, Segments: s.Segments, AllocatedBytes: s.Allocated,
		RequestedBytes: s.Requested, RoundingBytes: s.Rounding, StrandedBytes: s.Stranded}
	for _, f := range s.Stack {
		d.Stack = append(d.Stack, FrameString(f))
	}
	return d
}

// Doc is the attribution as JSON; nil for nil.
func (a *Attribution) Doc() *AttributionDoc {
	if a == nil {
		return nil
	}
	d := &AttributionDoc{Stacks: "collapsed", Sites: []SiteStatDoc{}, Total: a.Total.doc()}
	if a.FullStacks {
		d.Stacks = "full"
	}
	for _, s := range a.Sites {
		d.Sites = append(d.Sites, s.doc())
	}
	if a.Other.Site != "" {
		o := a.Other.doc()
		d.Other = &o
	}
	return d
}

// writeText writes the attribution's table: one row per site (per stack,
// each frame on a line of its own, with full stacks). On a terminal width
// columns wide (0: no limit) where a site's line does not fit, its site
// and frames go on lines of their own, indented by 4, clipped to fit
// (siteNameCap), and so does the site column's heading; a heading that does
// not fit beside the figures' headings wraps within its column.
func (a *Attribution) writeText(b *strings.Builder, width int) {
	if a == nil || a.Total.Blocks == 0 {
		return
	}
	what := "call site (first frame outside PyTorch and Python)"
	if a.FullStacks {
		what = "stack (innermost frame first)"
	}
	fmt.Fprintf(b, "\nMemory by allocation site: live blocks, the free space they strand, rounding\n")
	// indent is where the sites and frames start: under the site column
	// (51), or, where one would pass width, on lines of their own at 4.
	indent, names := 51, siteNameCap(width)
	clip := func(s string) string { return human.ClipName(untrusted.Printable(s), names) }
	if width > 0 {
		for _, s := range a.Sites {
			for _, f := range append([]string{s.Site}, framesOf(s)...) {
				if indent+utf8.RuneCountInString(clip(f)) > width {
					indent = 4
				}
			}
		}
	}
	figures := fmt.Sprintf("  %10s %10s %10s %6s %5s", "allocated", "stranded", "rounding", "blocks", "segs")
	col := len(figures) + 2 // where the site column starts (its frames 2 further)
	switch {
	case width <= 0 || indent == 51 && col+utf8.RuneCountInString(what) <= width:
		fmt.Fprintf(b, "%s  %s\n", figures, what)
	case indent == 51:
		// The site column's heading wraps within the column.
		lines := strings.Split(human.Wrap(what, width-col), "\n")
		fmt.Fprintf(b, "%s  %s\n", figures, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "%*s%s\n", col, "", l)
		}
	default:
		// The sites go under their figures: their heading too.
		fmt.Fprintf(b, "%s\n%s\n", figures, human.Indent(human.Wrap(what, width-indent), strings.Repeat(" ", indent)))
	}
	row := func(s SiteStat, name string) {
		line := fmt.Sprintf("  %10s %10s %10s %6d %5s", fb(s.Allocated), fb(s.Stranded), fb(s.Rounding), s.Blocks, segs(s.Segments))
		if indent == 51 || name == "total" {
			fmt.Fprintf(b, "%s  %s\n", line, name)
			return
		}
		fmt.Fprintf(b, "%s\n%*s%s\n", line, indent, "", name)
	}
	for _, s := range a.Sites {
		if !a.FullStacks || len(s.Stack) == 0 {
			row(s, clip(s.Site))
			continue
		}
		row(s, clip(FrameString(s.Stack[0])))
		for _, f := range s.Stack[1:] {
			fmt.Fprintf(b, "%*s%s\n", indent, "", clip(FrameString(f))) // under the site, indented
		}
	}
	if a.Other.Site != "" {
		row(a.Other, a.Other.Site)
	}
	row(a.Total, "total")
}

// segs prints a segment count, "-" for a sum that has none.
func segs(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// framesOf is a site's frames as the text prints them, its full stack's
// (--full-stacks) or none.
func framesOf(s SiteStat) []string {
	var fs []string
	for _, f := range s.Stack {
		fs = append(fs, FrameString(f))
	}
	return fs
}
