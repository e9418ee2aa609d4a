// The JSONL formats: Mooncake and our own. See package workload for the
// overview and the fields of each.

package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxIDBytes bounds the id and session strings of our JSONL and BurstGPT's
// Session ID (256 bytes): they are labels, not payloads.
const MaxIDBytes = 256

// object decodes one line as a JSON object of raw values. strict refuses
// keys outside known; otherwise they are ignored. Keys are matched exactly.
// reuse, when not nil, is a map from the row before, filled again where
// the line takes the fast path (fastObject); the values then alias b.
func object(b []byte, known []string, strict bool, reuse map[string]json.RawMessage) (map[string]json.RawMessage, *Error) {
	t := bytes.TrimSpace(b)
	if reuse != nil && fastObject(t, known, strict, reuse) {
		return reuse, nil
	}
	if len(t) == 0 || t[0] != '{' {
		return nil, &Error{Err: ErrSyntax, Msg: fmt.Sprintf("want a JSON object, got %s", clip(string(t)))}
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	syntax := func(err error) *Error {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return &Error{Err: ErrSyntax, Msg: "malformed JSON: the line ends before the object does"}
		}
		return &Error{Err: ErrSyntax, Msg: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, syntax(err)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		k, _ := tok.(string) // Token checks that object keys are strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntax(err)
		}
		if _, dup := m[k]; dup && (strict || index(known, k) >= 0) {
			return nil, fieldErr(clipKey(k), "appears twice")
		}
		m[k] = v
	}
	if _, err := dec.Token(); err != nil { // the '}'
		return nil, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Err: ErrSyntax, Msg: "unexpected text after the JSON object (one object per line)"}
	}
	if strict {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same key is named every time
		for _, k := range keys {
			if index(known, k) < 0 {
				return nil, fieldErr(clipKey(k), "unknown field (known: %s)", strings.Join(known, ", "))
			}
		}
	}
	return m, nil
}

func clipKey(k string) string { return untrusted.Clip(k) }

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// jsonText returns a raw JSON value as text for tokens and outTokens: a JSON
// string keeps its quotes, so a quoted count is refused.
func jsonText(raw json.RawMessage) string {
	return string(bytes.TrimSpace(raw))
}

// hashes parses a list of non-negative integer block ids; null or [] is
// nil. A block holds at least one token, so a list longer than the prompt
// is refused: it bounds the ids a row can hold by its own token count.
func hashes(field string, raw json.RawMessage, prompt int) ([]uint64, *Error) {
	if raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	ids, ok := fastIDs(bytes.TrimSpace(raw))
	if !ok {
		ids = nil
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, fieldErr(field, "must be a list of non-negative integers (got %s)", clip(jsonText(raw)))
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > prompt {
		return nil, fieldErr(field, "has %d ids for a prompt of %d tokens (at most one per token; Mooncake has one per 512)", len(ids), prompt)
	}
	return ids, nil
}

// number parses a non-negative JSON number scaled by 10^exp (see scaled).
func number(field string, raw json.RawMessage, exp int) (int64, *Error) {
	v := jsonText(raw)
	if strings.HasPrefix(v, "\"") || v == "null" || v == "true" || v == "false" {
		return 0, fieldErr(field, "must be a non-negative number (got %s)", clip(v))
	}
	return scaled(field, v, exp)
}

var mooncakeFields = []string{"timestamp", "input_length", "output_length", "hash_ids"}

type mooncakeParser struct {
	m map[string]json.RawMessage // reused from row to row (object)
}

func (*mooncakeParser) header([]byte) *Error { return nil }

// row parses {"timestamp": ms, "input_length": N, "output_length": N,
// "hash_ids": [...]}. Other keys are ignored (Mooncake's trace files differ
// in extras), hash_ids may be absent.
func (p *mooncakeParser) row(b []byte) (row, *Error) {
	m, e := object(b, mooncakeFields, false, p.m)
	if e != nil {
		return row{}, e
	}
	var rw row
	for _, f := range mooncakeFields[:3] {
		if m[f] == nil {
			return row{}, fieldErr(f, "missing")
		}
	}
	if rw.req.PromptTokens, e = tokens("input_length", jsonText(m["input_length"])); e != nil {
		return row{}, e
	}
	if rw.req.OutputTokens, e = outTokens("output_length", jsonText(m["output_length"])); e != nil {
		return row{}, e
	}
	if rw.time, e = number("timestamp", m["timestamp"], 6); e != nil { // ms
		return row{}, e
	}
	rw.hasTime = true
	if rw.req.PrefixHashes, e = hashes("hash_ids", m["hash_ids"], rw.req.PromptTokens); e != nil {
		return row{}, e
	}
	return rw, nil
}

var jsonlFields = []string{"id", "arrival_s", "prompt_tokens", "output_tokens", "session", "turn", "n", "prefix_hashes"}

type jsonlParser struct {
	m map[string]json.RawMessage // reused from row to row (object)
}

func (*jsonlParser) header([]byte) *Error { return nil }

func (p *jsonlParser) row(b []byte) (row, *Error) {
	m, e := object(b, jsonlFields, true, p.m)
	if e != nil {
		return row{}, e
	}
	var rw row
	str := func(f string) (string, *Error) {
		var s string
		if json.Unmarshal(m[f], &s) != nil || s == "" {
			return "", fieldErr(f, "must be a non-empty string (got %s)", clip(jsonText(m[f])))
		}
		if len(s) > MaxIDBytes {
			return "", fieldErr(f, "longer than %d bytes", MaxIDBytes)
		}
		return s, nil
	}
	small := func(f string, max int) (int, *Error) {
		v := jsonText(m[f])
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > int64(max) {
			return 0, fieldErr(f, "must be an integer from 1 to %d (got %s)", max, clip(v))
		}
		return int(n), nil
	}
	if m["id"] != nil {
		if rw.req.ID, e = str("id"); e != nil {
			return row{}, e
		}
		rw.id = true
	}
	if m["arrival_s"] != nil {
		if rw.time, e = number("arrival_s", m["arrival_s"], 9); e != nil {
			return row{}, e
		}
		rw.hasTime = true
	}
	if m["prompt_tokens"] == nil {
		return row{}, fieldErr("prompt_tokens", "missing")
	}
	if rw.req.PromptTokens, e = tokens("prompt_tokens", jsonText(m["prompt_tokens"])); e != nil {
		return row{}, e
	}
	if m["output_tokens"] == nil {
		return row{}, fieldErr("output_tokens", "missing")
	}
	if rw.req.OutputTokens, e = outTokens("output_tokens", jsonText(m["output_tokens"])); e != nil {
		return row{}, e
	}
	if m["session"] != nil {
		if rw.req.Session, e = str("session"); e != nil {
			return row{}, e
		}
	}
	if m["turn"] != nil {
		if rw.req.Session == "" {
			return row{}, fieldErr("turn", "needs a session")
		}
		if rw.req.Turn, e = small("turn", MaxTokens); e != nil {
			return row{}, e
		}
		rw.turn = true
	}
	rw.req.N = 1
	if m["n"] != nil {
		if rw.req.N, e = small("n", MaxN); e != nil {
			return row{}, e
		}
	}
	if rw.req.PrefixHashes, e = hashes("prefix_hashes", m["prefix_hashes"], rw.req.PromptTokens); e != nil {
		return row{}, e
	}
	return rw, nil
}

// WriteJSONL writes t in this package's JSONL format, one request per line
// in t's order, so that Read(..., JSONL, ...) gives back the same requests
// (with new line numbers). Arrivals are written as exact decimal seconds,
// and only when t.Timed.
func WriteJSONL(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	for _, r := range t.Requests {
		var sb strings.Builder
		sb.WriteString(`{"id":`)
		q, _ := json.Marshal(r.ID)
		sb.Write(q)
		if t.Timed {
			fmt.Fprintf(&sb, `,"arrival_s":%d.%09d`, r.Arrival/1e9, r.Arrival%1e9)
		}
		fmt.Fprintf(&sb, `,"prompt_tokens":%d,"output_tokens":%d`, r.PromptTokens, r.OutputTokens)
		if r.Session != "" {
			q, _ := json.Marshal(r.Session)
			fmt.Fprintf(&sb, `,"session":%s,"turn":%d`, q, r.Turn)
		}
		if r.N != 1 {
			fmt.Fprintf(&sb, `,"n":%d`, r.N)
		}
		if r.PrefixHashes != nil {
			q, _ := json.Marshal(r.PrefixHashes)
			fmt.Fprintf(&sb, `,"prefix_hashes":%s`, q)
		}
		sb.WriteString("}\n")
		if _, err := bw.WriteString(sb.String()); err != nil {
			return err
		}
	}
	return bw.Flush()
}
