package workload

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

var fastObjectSeeds = []string{
	`{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49]}`,
	`{"timestamp":27482,"input_length":6955,"output_length":52,"hash_ids":[]}`,
	`{"id":"a","arrival_s":0.5,"prompt_tokens":10,"output_tokens":0,"session":"s","turn":2,"n":1,"prefix_hashes":null}`,
	`{"id":"a\u0041","prompt_tokens":1,"output_tokens":1}`, `{}`, `{ }`, `{"a":{"b":1}}`, `{"timestamp":1,"timestamp":2}`,
	`{"x":1,"x":2,"input_length":3}`, `{"input_length":01}`, `{"input_length":-0.5e+3}`, `{"input_length":1.}`,
	`{"hash_ids":[1,]}`, `{"hash_ids":[,1]}`, `{"hash_ids":[1 2]}`, `{"hash_ids":[18446744073709551616]}`,
	`{"input_length":true,"output_length":false,"timestamp":null}`, `{"input_length":tru}`, `{"a":1}x`, `{"a":1,}`,
	`{"a" 1}`, `{"a":"` + "\x01" + `"}`, `{"a":"\xff"}`, `[1]`, `{"input_length":1`, "{\t\"input_length\"\r:\n2 }",
}

// checkFastObject: where fastObject takes a line, object's decoder takes it
// too, to the same raw values of the known keys.
func checkFastObject(t *testing.T, line string) {
	for _, k := range []struct {
		known  []string
		strict bool
	}{{mooncakeFields, false}, {jsonlFields, true}} {
		tb := bytes.TrimSpace([]byte(line))
		fast := map[string]json.RawMessage{}
		if !fastObject(tb, k.known, k.strict, fast) {
			continue
		}
		slow, e := object([]byte(line), k.known, k.strict, nil)
		if e != nil {
			t.Fatalf("%q: fastObject takes it, object refuses it: %v", line, e)
		}
		maps.DeleteFunc(slow, func(key string, _ json.RawMessage) bool { return !slices.Contains(k.known, key) })
		if !maps.EqualFunc(fast, slow, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("%q: fastObject %q, object %q", line, fast, slow)
		}
		if raw, ok := fast["hash_ids"]; ok {
			checkFastIDs(t, raw)
		}
		if raw, ok := fast["prefix_hashes"]; ok {
			checkFastIDs(t, raw)
		}
	}
}

// checkFastIDs: where fastIDs takes a JSON value, json.Unmarshal takes it
// to the same ids.
func checkFastIDs(t *testing.T, raw []byte) {
	got, ok := fastIDs(bytes.TrimSpace(raw))
	if !ok {
		return
	}
	var want []uint64
	if err := json.Unmarshal(raw, &want); err != nil || !slices.Equal(got, want) || (want == nil) != (got == nil) {
		t.Fatalf("%q: fastIDs %v, json.Unmarshal %v, %v", raw, got, want, err)
	}
}

func TestFastObject(t *testing.T) {
	for _, s := range fastObjectSeeds {
		checkFastObject(t, s)
	}
	m := map[string]json.RawMessage{}
	if !fastObject([]byte(fastObjectSeeds[0]), mooncakeFields, false, m) || len(m) != 4 {
		t.Errorf("fastObject leaves a Mooncake line to the decoder (%q)", m)
	}
	if ids, ok := fastIDs([]byte("[46, 47, 48]")); !ok || !slices.Equal(ids, []uint64{46, 47, 48}) {
		t.Errorf("fastIDs: %v %v", ids, ok)
	}
}

func FuzzFastObject(f *testing.F) {
	for _, s := range fastObjectSeeds {
		f.Add(s)
	}
	f.Fuzz(checkFastObject)
}
