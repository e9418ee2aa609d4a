// Shards: partial results of a sweep split across machines, and their
// merge. See doc.go for the overview.

package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// ErrBadShard means a shard file that cannot be merged: unreadable, from
// other inputs, or overlapping or missing candidates. The message names the
// file.
var ErrBadShard = errors.New("bad shard")

// PartialFormat names the shard file format and its version.
const PartialFormat = "gpufrag-advise-shard/1"

// MaxPartialBytes bounds a shard file (64 MiB: a result is under 1 KiB, so
// this is room for tens of thousands of candidates).
const MaxPartialBytes = 64 << 20

// Partial is a shard's results: the candidates with index % Shards ==
// Shard, with the inputs (and their digest) that decided them.
type Partial struct {
	Format  string   `json:"format"`
	Digest  string   `json:"digest"`
	Shard   int      `json:"shard"`
	Shards  int      `json:"shards"`
	Inputs  Inputs   `json:"inputs"`
	Results []Result `json:"results"`
}

// ShardIndices returns the candidate indices of shard i of n over count
// candidates: i, i+n, i+2n...
func ShardIndices(count, i, n int) []int {
	out := []int{}
	for j := i; j < count; j += n {
		out = append(out, j)
	}
	return out
}

// ParseShard parses "i/n" (0 ≤ i < n).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		_, err = fmt.Sscanf(a+" "+b, "%d %d", &i, &n)
	}
	if !ok || err != nil || fmt.Sprintf("%d/%d", i, n) != strings.TrimSpace(s) || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%w: shard %q: want i/n with 0 ≤ i < n, such as 0/4", ErrBadSpace, s)
	}
	return i, n, nil
}

// NewPartial packages a shard's results.
func NewPartial(in Inputs, shard, shards int, results []Result) *Partial {
	return &Partial{Format: PartialFormat, Digest: Digest(in), Shard: shard, Shards: shards, Inputs: in, Results: results}
}

// Write writes p as indented JSON.
func (p *Partial) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(p)
}

// ReadPartial reads and checks one shard file; name is used in messages.
// It checks the format, that the digest matches the inputs, the shard
// numbers, and that every result belongs to the shard, once, and matches
// its candidate.
func ReadPartial(r io.Reader, name string) (*Partial, error) {
	var p Partial
	if err := decodeStrict(r, name, MaxPartialBytes, ErrBadShard, &p); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) (*Partial, error) {
		return nil, fmt.Errorf("%w: %s: field %q: %s", ErrBadShard, name, field, fmt.Sprintf(format, args...))
	}
	if p.Format != PartialFormat {
		return bad("format", "%q, want %q (a file written by gpufrag advise --shard --out)", p.Format, PartialFormat)
	}
	if d := Digest(p.Inputs); p.Digest != d {
		return bad("digest", "%q does not match the inputs recorded in the file (%s); was it edited?", p.Digest, d)
	}
	if p.Shards < 1 || p.Shard < 0 || p.Shard >= p.Shards {
		return bad("shard", "%d of %d: want 0 ≤ shard < shards", p.Shard, p.Shards)
	}
	n := len(p.Inputs.Candidates)
	seen := map[int]bool{}
	for k, r := range p.Results {
		f := fmt.Sprintf("results[%d].index", k)
		switch {
		case r.Index < 0 || r.Index >= n:
			return bad(f, "%d: out of range (%d candidates)", r.Index, n)
		case r.Index%p.Shards != p.Shard:
			return bad(f, "%d does not belong to shard %d/%d", r.Index, p.Shard, p.Shards)
		case seen[r.Index]:
			return bad(f, "candidate %d listed twice", r.Index)
		case !r.Candidate.Equal(p.Inputs.Candidates[r.Index]):
			return bad(fmt.Sprintf("results[%d].settings", k), "%s, but candidate %d is %s", r.Settings, r.Index, p.Inputs.Candidates[r.Index].Settings)
		}
		if field, problem := r.check(p.Inputs); field != "" {
			return bad(fmt.Sprintf("results[%d].%s", k, field), "%s", problem)
		}
		seen[r.Index] = true
	}
	if want := len(ShardIndices(n, p.Shard, p.Shards)); len(p.Results) != want {
		return bad("results", "%d results, shard %d/%d of %d candidates has %d", len(p.Results), p.Shard, p.Shards, n, want)
	}
	return &p, nil
}

// Merge checks that parts (read from the files named in names) come from
// the same inputs and together cover every candidate exactly once, and
// builds the report an unsharded run would have built.
func Merge(parts []*Partial, names []string) (*Report, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no shard files", ErrBadShard)
	}
	if len(names) != len(parts) {
		return nil, fmt.Errorf("%w: %d names for %d shards", ErrBadShard, len(names), len(parts))
	}
	first := parts[0]
	bySlot := map[int]string{}
	var all []Result
	for k, p := range parts {
		if p.Digest != first.Digest {
			return nil, fmt.Errorf("%w: %s and %s come from different inputs (digest %.12s… and %.12s…): same trace, flags and candidates needed",
				ErrBadShard, names[0], names[k], first.Digest, p.Digest)
		}
		if p.Shards != first.Shards {
			return nil, fmt.Errorf("%w: %s is shard %d/%d but %s is shard %d/%d: all shards must split the sweep the same way",
				ErrBadShard, names[k], p.Shard, p.Shards, names[0], first.Shard, first.Shards)
		}
		if prev, dup := bySlot[p.Shard]; dup {
			return nil, fmt.Errorf("%w: %s and %s are both shard %d/%d", ErrBadShard, prev, names[k], p.Shard, p.Shards)
		}
		bySlot[p.Shard] = names[k]
		all = append(all, p.Results...)
	}
	var missing []string
	for i := range first.Shards {
		if _, ok := bySlot[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shards))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing shard(s) %s (have %d of %d files)", ErrBadShard, strings.Join(missing, ", "), len(parts), first.Shards)
	}
	slices.SortFunc(all, func(a, b Result) int { return a.Index - b.Index })
	return NewReport(first.Inputs, all)
}

// decodeStrict decodes exactly one JSON value of at most limit bytes from r
// into v, refusing unknown fields; errors wrap sentinel and name the file and,
// where the decoder knows them, the byte offset and field.
func decodeStrict(r io.Reader, name string, limit int, sentinel error, v any) error {
	// A JSON object starts with '{' after white space, and its first 4 KiB
	// are JSON text: anything else (a binary file, /dev/zero, random bytes
	// after "{") is refused before the rest is read.
	head, atEOF, br, err := untrusted.Head(r)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", sentinel, name, err)
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(t) == 0 && atEOF:
		return fmt.Errorf("%w: %s: empty file", sentinel, name)
	case len(t) > 0 && t[0] != '{':
		return fmt.Errorf("%w: %s: byte 0x%02x where a JSON object should start: not a file written by gpufrag advise", sentinel, name, t[0])
	}
	if err := untrusted.CheckJSONStart(head, atEOF); err != nil {
		return fmt.Errorf("%w: %s: %w", sentinel, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(br, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", sentinel, name, err)
	}
	if len(data) > limit {
		return fmt.Errorf("%w: %s: larger than %d bytes", sentinel, name, limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		switch off, field := untrusted.LocateDecodeError(data, err); {
		case off >= 0 && field != "":
			return fmt.Errorf("%w: %s: byte %d: field %q: %s", sentinel, name, off, field, untrusted.DecodeMessage(err))
		case off >= 0:
			return fmt.Errorf("%w: %s: byte %d: %s", sentinel, name, off, untrusted.DecodeMessage(err))
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%w: %s: empty file", sentinel, name)
		}
		return fmt.Errorf("%w: %s: %w", sentinel, name, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s: byte %d: more than one JSON value", sentinel, name, dec.InputOffset())
	}
	return nil
}
