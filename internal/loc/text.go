package loc

import (
	"bytes"
	"fmt"
)

// CheckText checks the start of an input that should be text, as
// LineReader does before its first line, for readers of a whole small
// document (a config.json) that do not read it in lines: a compressed or
// archive file's signature, UTF-16 text or a NUL byte in the first 512
// bytes is an *InputError (ErrBinary) that says what the input is and what
// to do. It returns nil for text; a UTF-8 byte order mark is text (TrimBOM
// drops it).
func CheckText(head []byte) error {
	head = head[:min(len(head), sniffBytes)]
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.sig)) {
			return &InputError{Line: 1, Err: ErrBinary, Msg: "not a text file: " + m.what}
		}
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return &InputError{Line: 1, Offset: int64(i), Err: ErrBinary,
			Msg: fmt.Sprintf("not a text file: byte %d is NUL (binary data, not lines of text)", i)}
	}
	return nil
}

// TrimBOM returns data without its UTF-8 byte order mark, if it starts
// with one (Windows editors write it; JSON and YAML decoders refuse it).
func TrimBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }
