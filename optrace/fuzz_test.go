package optrace_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/optrace"
)

// FuzzRead checks that Read never panics, that every error is an *Error
// naming a line, and that whatever Read accepts survives a round trip:
// Write then Read gives the same ops, and writing them again gives the same
// bytes. The seed corpus is in testdata/fuzz/FuzzRead. Run longer with
//
//	go test ./optrace -run '^$' -fuzz FuzzRead -fuzztime 60s -fuzzminimizetime 1s
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := optrace.Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var e *optrace.Error
			if !errors.As(err, &e) || e.Line < 1 || e.Err == nil {
				t.Fatalf("error %v (%T) is not an *optrace.Error with a line and a kind", err, err)
			}
			return
		}
		if err := optrace.Validate(ops, "fuzz"); err != nil {
			t.Fatalf("Read accepted a trace Validate refuses: %v", err)
		}
		var w1 bytes.Buffer
		if err := optrace.Write(&w1, ops); err != nil {
			t.Fatalf("Write of a trace Read accepted: %v", err)
		}
		again, err := optrace.Read(bytes.NewReader(w1.Bytes()), "rewritten")
		if err != nil {
			t.Fatalf("reading back what Write wrote: %v\n%s", err, w1.Bytes())
		}
		if len(again) != len(ops) {
			t.Fatalf("round trip: %d ops, then %d", len(ops), len(again))
		}
		for i := range ops {
			a, b := ops[i], again[i]
			a.Line, b.Line = 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("op %d: %+v, then %+v", i, a, b)
			}
			if again[i].Line != i+1 {
				t.Fatalf("rewritten op %d on line %d", i, again[i].Line)
			}
		}
		var w2 bytes.Buffer
		if err := optrace.Write(&w2, again); err != nil || !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("Write is not canonical (%v):\n%s\nthen\n%s", err, w1.Bytes(), w2.Bytes())
		}
	})
}
