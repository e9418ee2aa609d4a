package optrace

import (
	"bufio"
	"io"
)

// Write writes ops in the trace format, one line each, in the canonical
// form of Op.AppendJSON. It refuses (with an *Error naming the op) an op that
// Read would refuse on its own; it does not check ids across ops (Validate
// does), so any prefix of a trace can be written.
func Write(w io.Writer, ops []Op) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for i, op := range ops {
		if field, msg := op.check(); field != "" {
			return &Error{Line: lineOf(op, i), Field: field, Msg: msg, Err: ErrField}
		}
		b = append(op.AppendJSON(b[:0]), '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
