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
//     wraps onto several rows (unnamed series have no legend entry);
//   - axis ticks at round steps of the axis Unit: binary bytes (KiB, MiB,
//     GiB, ...), seconds (ns to h, chosen from the range), shares as
//     percentages, plain numbers with k/M/G suffixes past 10 000;
//   - a Y axis in bytes or shares starts at 0 when the data is
//     non-negative; a constant series gets room around it; Y has 5%
//     headroom;
//   - markers are dashed red lines with labels staggered over three rows;
//     the X axis widens to include every marker;
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
// LineChart.SVG returns deterministic bytes for the same input. The SVG has
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
// Content-Security-Policy meta tag also enforces in the browser. All text
// is HTML-escaped; Section.Text becomes paragraphs at blank lines, with
// single newlines kept as line breaks. RawSVG is inlined after a safety
// check (well-formed <svg>, no script, event handlers or external links).
// The output is also well-formed XML, which makes it easy to test.
//
// Unit.Format formats a single value the way ticks do, for table cells.
package report
