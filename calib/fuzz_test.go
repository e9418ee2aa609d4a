package calib

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any bytes give a dataset that validates or an ErrInvalid, never
// a panic. Seeds: the embedded file and a few broken ones.
func FuzzParse(f *testing.F) {
	f.Add(publishedYAML)
	f.Add([]byte("figures: []\n"))
	f.Add([]byte("figures:\n- id: x\n  value: .nan\n"))
	f.Add([]byte("sources: {a: 1}\nfigures: [1, 2]\n"))
	f.Add([]byte("\x00\xff"))
	f.Add([]byte(strings.Replace(good, "engine: vllm\n", "engine: vllm\n      weight_dtype: int4\n      kv_dtype: int4\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if d == nil {
			t.Fatal("nil dataset without an error")
		}
	})
}
