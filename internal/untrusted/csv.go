package untrusted

import (
	"bytes"
	"strings"
)

// SplitCSV splits one line of a CSV file into fields as encoding/csv does
// (RFC 4180: a field may be quoted, "" inside quotes is a quote),
// appending them to out. A quoted field cannot hold a line break: the
// readers split their input into lines first (LineReader), so that a
// line bounds every record and an error names the line it is on
// (encoding/csv, given one line, said "parse error on line 1" of a
// record on line 2). On a quoting error it returns the 0-based index of
// the field and a message that says what is wrong and what to do.
func SplitCSV(b []byte, out []string) ([]string, int, string) {
	for {
		if len(b) == 0 || b[0] != '"' {
			f, rest, more := bytes.Cut(b, []byte(","))
			if bytes.IndexByte(f, '"') >= 0 {
				return nil, len(out), `bare " in a non-quoted field (quote the whole field and double the quotes inside it)`
			}
			out = append(out, string(f))
			if !more {
				return out, 0, ""
			}
			b = rest
			continue
		}
		var sb strings.Builder
		b = b[1:]
		for {
			i := bytes.IndexByte(b, '"')
			if i < 0 {
				return nil, len(out), `quoted field without its closing " on this line (a field cannot hold a line break)`
			}
			sb.Write(b[:i])
			if b = b[i+1:]; len(b) == 0 || b[0] != '"' {
				break
			}
			sb.WriteByte('"')
			b = b[1:]
		}
		out = append(out, sb.String())
		if len(b) == 0 {
			return out, 0, ""
		}
		if b[0] != ',' {
			return nil, len(out) - 1, `extraneous " in a quoted field (double a quote inside quotes)`
		}
		b = b[1:]
	}
}
