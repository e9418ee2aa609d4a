package kube

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Bounds of Read. Read decodes its input one object at a time, so memory
// follows the largest object and the objects kept, not the input's size.
const (
	// MaxReadBytes bounds the whole input (2 GiB). Kubernetes supports
	// clusters of up to 5,000 nodes and 150,000 pods ("Considerations for
	// large clusters"); kubectl get nodes,pods -A -o json of one is about
	// 1.3 GB (pods of some 8 KB with their managedFields, nodes of some 15
	// KB with their image lists), which this admits with room to spare.
	MaxReadBytes = 2 << 30
	// MaxObjectBytes bounds one object of the list (8 MiB): etcd refuses
	// objects over 1.5 MiB (its default --max-request-bytes), and kubectl's
	// indented JSON of one is at most a few times that.
	MaxObjectBytes = 8 << 20
	// MaxNodes and MaxPods bound the objects kept (50,000 and 1,500,000):
	// ten times Kubernetes' supported cluster size, so a real cluster always
	// fits and a generated stream of tiny objects cannot fill memory.
	MaxNodes = 50_000
	MaxPods  = 1_500_000
)

// readChunk caps one read from the input (64 KiB), so the JSON decoder
// reads at most that far past the object it decodes and MaxObjectBytes
// holds to within it.
const readChunk = 64 << 10

// ErrNoNodes is wrapped by the error of Read for a list without a Node: a
// cluster cannot be inspected without its nodes (kubectl get pods -o json
// alone lists none).
var ErrNoNodes = errors.New("no nodes")

// want says what Read reads, for its errors.
const want = "want a kubectl List (kubectl get nodes,pods -A -o json > cluster.json) or one Node or Pod object"

// limits are the bounds Read enforces: MaxReadBytes and MaxObjectBytes
// (a variable so that tests can lower them).
var limits = struct{ total, object int64 }{MaxReadBytes, MaxObjectBytes}

// boundedReader counts what it reads and stops at the total bound and at
// the object bound, counted from mark.
type boundedReader struct {
	r    io.Reader
	n    int64 // bytes read
	mark int64 // n when the current object started
	err  error // the bound crossed, once crossed
}

var (
	errTooLarge  = errors.New("input too large")
	errObjTooBig = errors.New("object too large")
)

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	switch {
	case b.n >= limits.total:
		b.err = errTooLarge
		return 0, b.err
	case b.n-b.mark > limits.object+readChunk:
		b.err = errObjTooBig
		return 0, b.err
	}
	p = p[:min(len(p), readChunk, int(limits.total-b.n))]
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

// decoder walks the top level of a kubectl document.
type decoder struct {
	name string
	in   *boundedReader
	dec  *json.Decoder
}

// fail turns an error met at path (a JSON path such as items[3], or "")
// into an *cluster.InputError saying what to do.
func (d *decoder) fail(path string, err error) error {
	switch {
	case errors.Is(err, errTooLarge):
		return &cluster.InputError{Name: d.name, Field: path, Msg: fmt.Sprintf("longer than %s (kube.MaxReadBytes): more than a cluster's kubectl listing; save only nodes and pods (kubectl get nodes,pods -A -o json)", untrusted.Size(limits.total))}
	case errors.Is(err, errObjTooBig):
		return &cluster.InputError{Name: d.name, Field: path, Msg: fmt.Sprintf("one object longer than %s (kube.MaxObjectBytes): Kubernetes objects are at most 1.5 MiB", untrusted.Size(limits.object))}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return &cluster.InputError{Name: d.name, Field: path, Msg: fmt.Sprintf("ends inside the document at byte %d (truncated?): %s", d.dec.InputOffset(), want)}
	}
	var se *json.SyntaxError
	var ute *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &ute) {
		return &cluster.InputError{Name: d.name, Field: path, Msg: fmt.Sprintf("at byte %d: %v", d.dec.InputOffset(), err)}
	}
	return fmt.Errorf("%s: %w", d.name, err)
}

// decode decodes the next value into v, bounded as one object.
func (d *decoder) decode(path string, v any) error {
	d.in.mark = d.in.n
	if err := d.dec.Decode(v); err != nil {
		return d.fail(path, err)
	}
	return nil
}

// delim reads the next token and checks it is the delimiter c; null is
// accepted where ok allows it (an absent list).
func (d *decoder) delim(path string, c json.Delim, null bool) (bool, error) {
	d.in.mark = d.in.n
	tok, err := d.dec.Token()
	if err != nil {
		return false, d.fail(path, err)
	}
	if tok == nil && null {
		return false, nil
	}
	if tok != c {
		return false, &cluster.InputError{Name: d.name, Field: path, Msg: fmt.Sprintf("is %s, want %s", describeToken(tok), describeDelim(c))}
	}
	return true, nil
}

func describeDelim(c json.Delim) string {
	if c == '[' {
		return "an array"
	}
	return "an object"
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return describeDelim(v)
	case string:
		return "the string " + untrusted.Quote(v)
	case bool:
		return "a boolean"
	}
	return "a number"
}

// firstByte skips white space and returns the first byte of the input,
// without consuming it.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, br.UnreadByte()
		}
	}
}

// describeStart names what a document starts with instead of an object
// (c, the first byte, is still in br).
func describeStart(_ byte, br *bufio.Reader) string {
	head, _ := br.Peek(16)
	return untrusted.DescribeJSONStart(head)
}

// readDocument reads a kubectl document: the top-level object's items
// (each handed to item as it is decoded, with its index) and kind, and,
// for a single object, its other fields.
func readDocument(r io.Reader, name string, item func(i int, o *object) error) (kind string, single *object, err error) {
	in := &boundedReader{r: r}
	br := bufio.NewReaderSize(in, readChunk)
	c, err := firstByte(br)
	if err == io.EOF {
		return "", nil, &cluster.InputError{Name: name, Msg: "empty input: " + want}
	}
	if err != nil {
		return "", nil, (&decoder{name: name, in: in, dec: json.NewDecoder(br)}).fail("", err)
	}
	if c != '{' {
		return "", nil, &cluster.InputError{Name: name, Msg: "starts with " + describeStart(c, br) + ": " + want}
	}
	// Random bytes or another format after "{" fail here, within the first
	// 4 KiB, not when the decoder gets to them.
	head, perr := br.Peek(untrusted.SniffBytes)
	var le *untrusted.InputError
	if errors.As(untrusted.CheckJSONStart(head, perr == io.EOF), &le) {
		return "", nil, &cluster.InputError{Name: name, Line: le.Line, Msg: le.Msg}
	}
	d := &decoder{name: name, in: in, dec: json.NewDecoder(br)}
	if _, err := d.delim("", '{', false); err != nil {
		return "", nil, err
	}
	rest := map[string]json.RawMessage{} // the fields of a single object
	hasItems := false
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return "", nil, d.fail("", err)
		}
		key, _ := tok.(string)
		switch key {
		case "kind":
			if err := d.decode("kind", &kind); err != nil {
				return "", nil, err
			}
		case "items":
			hasItems = true
			open, err := d.delim("items", '[', true)
			if err != nil || !open {
				if err == nil {
					continue
				}
				return "", nil, err
			}
			for i := 0; d.dec.More(); i++ {
				path := fmt.Sprintf("items[%d]", i)
				var o object
				if err := d.decode(path, &o); err != nil {
					return "", nil, err
				}
				if err := item(i, &o); err != nil {
					return "", nil, err
				}
			}
			if _, err := d.dec.Token(); err != nil { // the closing ]
				return "", nil, d.fail("items", err)
			}
		default:
			var raw json.RawMessage
			if err := d.decode(untrusted.Clip(key), &raw); err != nil {
				return "", nil, err
			}
			if _, dup := rest[key]; !dup {
				rest[key] = raw
			}
		}
	}
	if _, err := d.dec.Token(); err != nil { // the closing }
		return "", nil, d.fail("", err)
	}
	end := d.dec.InputOffset()
	if _, err := d.dec.Token(); err != io.EOF {
		if err != nil {
			return "", nil, d.fail("", err)
		}
		return "", nil, &cluster.InputError{Name: name, Msg: fmt.Sprintf("more than one JSON value (another follows the first, which ends at byte %d): %s", end, want)}
	}
	switch {
	case strings.HasSuffix(kind, "List"):
		return kind, nil, nil
	case kind == "Node" || kind == "Pod":
		if hasItems {
			return "", nil, &cluster.InputError{Name: name, Field: "items", Msg: fmt.Sprintf("a %s has no items: %s", kind, want)}
		}
		rest["kind"], _ = json.Marshal(kind)
		b, _ := json.Marshal(rest)
		var o object
		if err := json.Unmarshal(b, &o); err != nil {
			return "", nil, &cluster.InputError{Name: name, Msg: err.Error()}
		}
		return kind, &o, nil
	case kind == "":
		return "", nil, &cluster.InputError{Name: name, Field: "kind", Msg: "missing: " + want}
	}
	return "", nil, &cluster.InputError{Name: name, Field: "kind", Msg: fmt.Sprintf("is %s: %s", untrusted.Quote(kind), want)}
}
