package sim

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReadStepModel feeds arbitrary bytes to ReadStepModel: it never
// panics, every error wraps ErrBadProfile, it returns exactly one of a
// profile and a joint model, and what it returns validates.
//
//	go test -run '^$' -fuzz FuzzReadStepModel -fuzztime 20s -fuzzminimizetime 2s ./sim/
func FuzzReadStepModel(f *testing.F) {
	f.Add([]byte(h100ProfileYAML))
	f.Add(jointYAML)
	f.Add([]byte("foo: 1\n"))
	f.Add([]byte("engines: {}\n"))
	f.Add([]byte("gpu: x\nengines: {a: 1}\n"))
	f.Add([]byte(""))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, j, err := ReadStepModel(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadProfile) {
				t.Fatalf("error %v does not wrap ErrBadProfile", err)
			}
			return
		}
		if (p == nil) == (j == nil) {
			t.Fatalf("profile %v and joint model %v: want exactly one", p != nil, j != nil)
		}
		if p != nil {
			if err := p.Validate(); err != nil {
				t.Fatalf("accepted a profile that does not validate: %v", err)
			}
		} else if err := j.Validate(); err != nil {
			t.Fatalf("accepted a joint model that does not validate: %v", err)
		}
	})
}
