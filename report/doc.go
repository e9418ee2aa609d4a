// Package report renders gpufrag's results: line charts as SVG or PNG, and
// self-contained HTML pages that combine text, charts, tables and SVG
// drawn elsewhere (a segment map, say). The simulate, analyze and cluster
// commands share it so that their reports look alike.
//
// # Charts
//
// A LineChart draws one or more Series (Y over X) with vertical Markers
// (OOM, preemption, ...). Charts are drawn with gonum.org/v1/plot, in pure
// Go. Defaults aim to be readable without tuning:
//
//   - size 720×300 points when Width or Height is 0;
//   - distinct colours (Tableau 10, colour-blind friendly); beyond ten
//     series the colours repeat with dash patterns;
//   - a light grid, and a legend of named series under the plot that
//     wraps onto several rows (unnamed series have no legend entry); only
//     lines that show get an entry: a series with no finite point has
//     none, and one that a later series covers everywhere (same X, Y
//     within a line's width) is named in that series' entry,
//     "requested ≈ allocated";
//   - axis ticks at round steps of the axis Unit: binary bytes (KiB, MiB,
//     GiB, ...), seconds (ns to h, chosen from the range), shares as
//     percentages, ratios as plain fractions (health 0.25, as the text
//     reports print it), plain numbers with k/M/G suffixes past 10 000;
//   - a Y axis in bytes, shares or ratios starts at 0 when the data is
//     non-negative; a constant series gets room around it; Y has 5%
//     headroom;
//   - markers are dashed red lines (thin and translucent where there is
//     more than one per 4 points) under the data's headroom; markers
//     within 60 points share one label that counts them by kind, "oom ×37,
//     preempt ×2" (Marker.Count lets a caller bin many events into one
//     marker), placed on the first of three rows where it overlaps no
//     other label and left out where none is free; the X axis widens to
//     include every marker;
//   - a chart with no finite point shows an empty frame saying "no data".
//
// Inputs: NaN or ±Inf in X or Y breaks the line there (a lone finite point
// between breaks is drawn as a dot). Mismatched X and Y lengths, a
// non-finite Marker.X, an unknown Unit or an absurd size are errors.
//
// Large series are cheap: a series longer than MaxPointsPerSeries (2000)
// is reduced with Downsample before drawing (M4 aggregation over index
// buckets: each bucket keeps its first, last, minimum and maximum points
// and its first gap), so spikes, dips and gaps survive, output stays
// deterministic and an SVG of millions of points stays around 100 KB.
//
// LineChart.SVG returns deterministic bytes for the same input; its legend
// and marker labels are in <g class="legend"> and <g class="marker-labels">
// so that tests (package report/browsercheck) can find them. The SVG has
// no XML prolog and can be inlined in HTML as is; it links to nothing: no
// font file, no image, no URL other than the SVG and XLink namespace
// names. Text is set in Liberation Sans for layout and named in the SVG as
// 'Liberation Sans', Arial, Helvetica, sans-serif, which viewers take from
// the fonts installed locally (Arial has the same metrics). LineChart.PNG
// renders at one pixel per point; LineChart.PNGScaled renders at higher
// resolution. PNG text uses the embedded Liberation fonts, so PNGs look the
// same everywhere.
//
// # Pages
//
// Page.WriteHTML writes one HTML5 file with inline CSS and inline SVG: no
// script, no font, image or style sheet fetched from anywhere, which a
// Content-Security-Policy meta tag also enforces in the browser. All text,
// charts' included, goes through untrusted.Printable (a control character, a
// bidi override or a byte that is not UTF-8 from an input file shows as an
// escape such as \x1b, and the page stays well-formed XML) and is
// HTML-escaped; Section.Text becomes paragraphs at blank lines, with
// single newlines kept as line breaks, and Section.Pre (a text report's
// fixed-width tables) a <pre> block that scrolls sideways inside itself.
// A table sits in a wrapper that scrolls when the table is wider than the
// column, and long names in its text cells may break after ':', ',', '/'
// and '=', so the page itself never scrolls sideways; in a window up to
// 600 px wide (a phone) each row becomes a card of "header value" lines
// instead (each cell carries its header as data-label). The main column is
// 1040 px wide at most, room for a 720-point chart at its natural size. A
// chart shrinks with a narrower column down to the width at which its
// smallest text is MinTextPx (10 px) high, and scrolls sideways inside its
// figure below that. RawSVG is inlined after a safety
// check (well-formed <svg>, no script, event handlers or external links).
// The output is also well-formed XML, which makes it easy to test.
//
// Unit.Format formats a single value the way ticks do, for table cells.
package report
