package untrusted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONError is a small JSON document that CheckJSON refused: the byte
// offset of the problem, the path of the key it concerns ("$.devices[2]")
// when there is one, and what is wrong.
type JSONError struct {
	Offset int64
	Path   string
	Msg    string
	Syntax bool // the document is not JSON there (or ends there)
}

func (e *JSONError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("byte %d: %s: %s", e.Offset, e.Path, e.Msg)
}

// CheckJSON checks what encoding/json lets through silently in a small
// document (a sidecar, a memory_stats dump, a config) before it is decoded
// into a struct:
//
//   - invalid UTF-8, which json.Unmarshal turns into U+FFFD;
//   - a key repeated in one object, where json.Unmarshal keeps the last;
//   - two keys of one object that differ only in case ("instance" and
//     "INSTANCE"), which json.Unmarshal decodes into the same struct field;
//   - an escaped UTF-16 surrogate that is not half of a pair ("\ud800"),
//     which json.Unmarshal also turns into U+FFFD (Python's json.dumps
//     writes one for a string holding an undecodable byte);
//   - anything after the first value.
//
// It walks the document's tokens once, in memory bounded by the nesting
// depth and one object's keys, so callers bound the document's size first.
// It does not decode values; the caller's json.Unmarshal still checks their
// types.
func CheckJSON(data []byte) error {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return &JSONError{Offset: int64(off), Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", data[off])}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := jsonChecker{data: data, dec: dec}
	if err := c.value("$"); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return &JSONError{Offset: c.skipSpace(end), Msg: "more than one value in the document"}
	}
	if off, ok := loneSurrogate(data); ok {
		return &JSONError{Offset: int64(off), Msg: fmt.Sprintf("%s is half of a UTF-16 surrogate pair, not a character (a decoder reads it as U+FFFD)", Quote(string(data[off:off+6])))}
	}
	return nil
}

// loneSurrogate returns the offset of the first \uXXXX escape of data that
// is a UTF-16 surrogate outside a high-low pair. data is a valid JSON
// document, so every backslash starts an escape inside a string.
func loneSurrogate(data []byte) (int, bool) {
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] != 'u' { // a two-byte escape
			i++
			continue
		}
		r := hex4(data[i+2 : i+6])
		if !utf16.IsSurrogate(r) {
			i += 5
			continue
		}
		if r < 0xdc00 && i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
			if lo := hex4(data[i+8 : i+12]); lo >= 0xdc00 && lo < 0xe000 {
				i += 11
				continue
			}
		}
		return i, true
	}
	return 0, false
}

// hex4 reads the four hexadecimal digits of a \u escape.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

type jsonChecker struct {
	data []byte
	dec  *json.Decoder
}

// value reads one value, checking the keys of every object in it; path
// names the value.
func (c *jsonChecker) value(path string) error {
	dec := c.dec
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return c.jsonSyntax(off, path, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]string{} // folded key -> key as written
		for dec.More() {
			koff := dec.InputOffset()
			ktok, err := dec.Token()
			if err != nil {
				return c.jsonSyntax(koff, path, err)
			}
			key, _ := ktok.(string)
			folded := strings.ToLower(key)
			if prev, dup := seen[folded]; dup {
				msg := fmt.Sprintf("key %s appears twice", Quote(key))
				if prev != key {
					msg = fmt.Sprintf("keys %s and %s differ only in case (a decoder reads them as one)", Quote(prev), Quote(key))
				}
				return &JSONError{Offset: c.skipSpace(koff), Path: path, Msg: msg}
			}
			seen[folded] = key
			if err := c.value(path + "." + Clip(key)); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := c.value(fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	eoff := dec.InputOffset()
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return c.jsonSyntax(eoff, path, err)
	}
	return nil
}

// skipSpace moves off past the white space and the comma that the decoder's
// offset still counts before a key, to where the key starts.
func (c *jsonChecker) skipSpace(off int64) int64 {
	for off < int64(len(c.data)) && strings.IndexByte(" \t\r\n,", c.data[off]) >= 0 {
		off++
	}
	return off
}

// jsonSyntax turns a decoder error into a JSONError at the best offset known.
func (c *jsonChecker) jsonSyntax(off int64, path string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// A json.Decoder counts the offset of an error inside a value from
		// the value's start; Unmarshal, scanning the whole document, gives
		// the bad byte's (the one Offset counts last).
		var whole *json.SyntaxError
		if errors.As(json.Unmarshal(c.data, new(json.RawMessage)), &whole) {
			return &JSONError{Offset: max(whole.Offset-1, 0), Path: path, Msg: whole.Error(), Syntax: true}
		}
		return &JSONError{Offset: se.Offset, Path: path, Msg: se.Error(), Syntax: true}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		// Where the document ends, not where its last whole token did.
		return &JSONError{Offset: int64(len(c.data)), Path: path, Msg: "unexpected end of the document", Syntax: true}
	}
	return &JSONError{Offset: off, Path: path, Msg: err.Error()}
}

// LocateDecodeError returns where in data the error err of an
// encoding/json Decoder reading data arose: the byte offset (-1 when
// unknown) and the field it concerns ("" when none). encoding/json gives
// the offset of a syntax error and of a type mismatch (with the field's
// path), but not of an unknown field (Decoder.DisallowUnknownFields): that
// one is located at the first object key of its name, the field being that
// name.
func LocateDecodeError(data []byte, err error) (int64, string) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset, ""
	case errors.As(err, &te):
		return te.Offset, te.Field
	case err == nil:
		return -1, ""
	}
	// encoding/json's text for DisallowUnknownFields: `json: unknown field "NAME"`.
	quoted, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return -1, ""
	}
	name, uerr := strconv.Unquote(quoted)
	if uerr != nil {
		return -1, ""
	}
	return keyOffset(data, name), name
}

// keyOffset is the byte offset of the first object key named name in data
// (its opening quote), -1 if there is none before the first error.
func keyOffset(data []byte, name string) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct{ object, wantKey bool }
	var stack []level
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return -1
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, level{object: t == '{', wantKey: t == '{'})
				continue
			default:
				stack = stack[:top]
				top--
			}
		case string:
			if top >= 0 && stack[top].object && stack[top].wantKey {
				if t == name {
					// The key starts after the separators Token skipped.
					for before < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,:"), data[before]) >= 0 {
						before++
					}
					return before
				}
				stack[top].wantKey = false
				continue
			}
		}
		// A value ended: an object's next token is a key.
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
	}
}

// DecodeMessage words an error of an encoding/json Decoder for a user,
// without Go's names: a type mismatch as "want an integer, got a string"
// (encoding/json says "cannot unmarshal string into Go struct field
// Node.nodes.cpu_milli of type int64"), an unknown field as "unknown
// field", a syntax error as encoding/json words it; LocateDecodeError
// gives where.
func DecodeMessage(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &te):
		return "want " + jsonWant(te.Type) + ", got " + jsonGot(te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonWant is what a JSON value decoded into a Go value of type t must be.
func jsonWant(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonWant(t.Elem())
	}
	return "another value"
}

// jsonGot words encoding/json's UnmarshalTypeError.Value: "string",
// "number", "number -1", "array", "object", "bool".
func jsonGot(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + Clip(n)
	}
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	}
	return Clip(v)
}
