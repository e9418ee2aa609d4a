package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gpufrag/gpufrag/internal/outfile"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/report"
)

// writeJSON writes v the one way the commands print --json: indented by two
// spaces, a newline at the end, escapeHTML as encoding/json's
// SetEscapeHTML, and through untrusted.PrintableJSON, so that a name from an
// input holding DEL, a C1 control or a bidi control (which encoding/json
// writes as they are) reaches the terminal as a \u escape; the document
// reads back as the same strings.
func writeJSON(w io.Writer, v any, escapeHTML bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(untrusted.PrintableJSON(buf.Bytes()))
	return err
}

// writePage writes page to path (analyze's and diff's --html).
func writePage(path string, page report.Page) error {
	var out strings.Builder
	if err := page.WriteHTML(&out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return outfile.WriteFile(path, []byte(out.String()), 0o644)
}
