package calib

import (
	"bytes"
	"fmt"
)

// BandsDocPath is the page whose table of bands the embedded residuals
// give (docs/calibrate.md, "Error bands"), relative to the repository
// root; BandsDoc rewrites the table, go generate ./calib runs it.
const BandsDocPath = "docs/calibrate.md"

// The lines around the table in BandsDocPath.
const (
	bandsBegin = "<!-- bands table: begin -->\n"
	bandsEnd   = "<!-- bands table: end -->"
)

// BandsDoc returns doc, the text of BandsDocPath (name, for errors), with
// the table between its bands-table lines replaced by the one the embedded
// residuals give (Bands.Table); doc unchanged when the table is current.
func BandsDoc(doc []byte, name string) ([]byte, error) {
	pre, rest, ok1 := bytes.Cut(doc, []byte(bandsBegin))
	_, post, ok2 := bytes.Cut(rest, []byte(bandsEnd))
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s: no line %q followed by a line %q around the table of bands", name, bandsBegin[:len(bandsBegin)-1], bandsEnd)
	}
	f, err := EmbeddedResiduals()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(doc)+1024)
	out = append(append(out, pre...), bandsBegin...)
	out = append(append(out, NewBands(f).Table()...), bandsEnd...)
	return append(out, post...), nil
}
