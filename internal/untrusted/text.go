package untrusted

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// SniffBytes is how much of an input's start a reader checks before it
// reads on (4 KiB): every reader of text (LineReader) or of a JSON
// document (CheckJSONStart) looks at this much first, so that random bytes,
// a binary file or the wrong kind of file fail within a few kilobytes read
// instead of after the reader's size limit (256 MiB of random bytes took
// 600 MB to 1.2 GB of memory before). Random bytes fail within their first
// few: a byte of 0x80 or above starts valid UTF-8 with a probability under
// one in eight, and one in eight bytes is a control character. Real text
// inputs (traces, CSV lists, JSON documents) show their form in far less:
// a header line, the first key of an object.
const SniffBytes = 4 << 10

// magics are file signatures a user may plausibly hand to a text reader,
// with what to tell them.
var magics = []struct {
	sig  string
	what string
}{
	{"\x1f\x8b", "gzip-compressed data: decompress it first (gunzip -k FILE)"},
	{"\x28\xb5\x2f\xfd", "zstd-compressed data: decompress it first (zstd -d FILE)"},
	{"BZh", "bzip2-compressed data: decompress it first (bunzip2 -k FILE)"},
	{"\xfd7zXZ\x00", "xz-compressed data: decompress it first (unxz -k FILE)"},
	{"PK\x03\x04", "a ZIP archive (or a torch.save file): extract the text file from it first"},
	{"\xff\xfe", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8 FILE)"},
	{"\xfe\xff", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8 FILE)"},
}

// CheckText returns an *InputError of kind ErrBinary when head, the first
// bytes of an input (at most SniffBytes are looked at; atEOF says head is
// the whole input), is not the start of a UTF-8 text file: when it begins
// with a compressed or archive file's signature or UTF-16's byte order
// mark, or holds a NUL byte, a byte sequence that is not UTF-8, or a
// control character other than tab, line feed and carriage return (C0 and
// DEL, which no trace, CSV list, JSON or YAML document holds raw). A
// multi-byte character cut by the end of head is allowed unless atEOF. The
// error names the byte's offset and its line, counted as LineReader counts
// them ("\n", "\r\n" or a lone "\r" end a line).
func CheckText(head []byte, atEOF bool) error {
	if len(head) > SniffBytes {
		head, atEOF = head[:SniffBytes], false
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.sig)) {
			return &InputError{Line: 1, Err: ErrBinary, Msg: "not a text file: " + m.what}
		}
	}
	for i := 0; i < len(head); {
		c := head[i]
		if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		var what string
		switch r, n := utf8.DecodeRune(head[i:]); {
		case c == 0:
			what = "is NUL (binary data, not lines of text)"
		case c < 0x80:
			what = fmt.Sprintf("is the control character 0x%02x (binary data, not text)", c)
		case r == utf8.RuneError && n <= 1:
			if !atEOF && !utf8.FullRune(head[i:]) {
				return nil // a character cut by the end of head
			}
			what = fmt.Sprintf("(0x%02x) is not UTF-8 (binary data, or text in another encoding: convert it first with iconv -f ENCODING -t UTF-8 FILE)", c)
		default:
			i += n
			continue
		}
		return &InputError{Line: lineAt(head, i), Offset: int64(i), Err: ErrBinary,
			Msg: fmt.Sprintf("not a text file: byte %d %s", i, what)}
	}
	return nil
}

// lineAt returns the 1-based line holding byte off of b, counting "\n",
// "\r\n" and a lone "\r" as one line ending each.
func lineAt(b []byte, off int) int {
	b = b[:off]
	return 1 + bytes.Count(b, []byte("\n")) + bytes.Count(b, []byte("\r")) - bytes.Count(b, []byte("\r\n"))
}

// ErrNotJSON: the start of the input is text but not JSON.
var ErrNotJSON = errors.New("not JSON")

// CheckJSONStart checks head, the first bytes of an input that should be
// one JSON document (atEOF: head is all of it), before a reader reads the
// whole document: it must be text (CheckText), and its tokens must be
// valid JSON as far as head goes (an empty input, a value cut by the end
// of the input and a second value are left to the reader). It returns an *InputError of kind
// ErrBinary or ErrNotJSON naming the byte offset and line, so that a
// reader with a limit of many megabytes refuses random bytes or another
// format within SniffBytes. It checks syntax only: what the document
// holds is the reader's business.
func CheckJSONStart(head []byte, atEOF bool) error {
	if len(head) > SniffBytes {
		head, atEOF = head[:SniffBytes], false
	}
	if err := CheckText(head, atEOF); err != nil {
		return err
	}
	body := bytes.TrimPrefix(head, bom)
	base := len(head) - len(body)
	// Unmarshal scans the whole of body before decoding and reports the
	// offset of the first bad byte (a json.Decoder's tokens count from the
	// start of their value instead). An error at body's last byte may be
	// its end cutting a value ("tru" reads as "tru "), and a second value
	// after the first is the reader's to report (as more than one value):
	// neither is refused here.
	var se *json.SyntaxError
	if err := json.Unmarshal(body, new(json.RawMessage)); !errors.As(err, &se) ||
		se.Offset < 1 || se.Offset >= int64(len(body)) || strings.Contains(se.Error(), "after top-level value") {
		return nil
	}
	off := base + int(se.Offset) - 1 // Offset counts the bad byte
	return &InputError{Line: lineAt(head, off), Offset: int64(off), Err: ErrNotJSON,
		Msg: fmt.Sprintf("not JSON: byte %d: %s", off, se.Error())}
}

// Head returns the first bytes of r, up to SniffBytes (fewer only at the
// end of the input: then atEOF), and a reader that yields r's whole input,
// those bytes included, for a reader to check its start (CheckText,
// CheckJSONStart) before reading on. An error reading r other than io.EOF
// is returned as it is.
func Head(r io.Reader) (head []byte, atEOF bool, whole *bufio.Reader, err error) {
	br := bufio.NewReaderSize(r, SniffBytes)
	head, err = br.Peek(SniffBytes)
	switch err {
	case nil:
		return head, false, br, nil
	case io.EOF:
		return head, true, br, nil
	}
	return nil, false, nil, err
}

// Sniff reads the first SniffBytes of r and checks them with check
// (CheckText or CheckJSONStart), for a reader that reads its whole input
// into memory: it returns a reader of the whole input, or check's error
// (an *InputError), or an error reading r.
func Sniff(r io.Reader, check func(head []byte, atEOF bool) error) (io.Reader, error) {
	head, atEOF, whole, err := Head(r)
	if err != nil {
		return nil, err
	}
	if err := check(head, atEOF); err != nil {
		return nil, err
	}
	return whole, nil
}

// TrimBOM returns data without its UTF-8 byte order mark, if it starts
// with one (Windows editors write it; JSON and YAML decoders refuse it).
func TrimBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }
