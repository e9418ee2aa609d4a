package model

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseDType(t *testing.T) {
	tests := []struct {
		in   string
		want DType
		bits int
	}{
		{"fp32", FP32, 32}, {"float32", FP32, 32},
		{"fp16", FP16, 16}, {"float16", FP16, 16}, {"HALF", FP16, 16},
		{"bf16", BF16, 16}, {"bfloat16", BF16, 16}, {" BF16 ", BF16, 16},
		{"fp8", FP8E4M3, 8}, {"e4m3", FP8E4M3, 8}, {"fp8_e4m3", FP8E4M3, 8}, {"float8_e4m3fn", FP8E4M3, 8},
		{"fp8_e5m2", FP8E5M2, 8}, {"e5m2", FP8E5M2, 8},
		{"int8", INT8, 8}, {"int4", INT4, 4},
	}
	for _, tt := range tests {
		got, err := ParseDType(tt.in)
		if err != nil || got != tt.want || got.Bits() != tt.bits {
			t.Errorf("ParseDType(%q) = %v (%d bits), %v; want %v (%d bits)", tt.in, got, got.Bits(), err, tt.want, tt.bits)
		}
		// The canonical name parses back to the same value.
		if back, err := ParseDType(got.String()); err != nil || back != got {
			t.Errorf("ParseDType(%q) = %v, %v", got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "fp4", "float64", "auto", "int"} {
		if _, err := ParseDType(bad); !errors.Is(err, ErrBadDType) {
			t.Errorf("ParseDType(%q): err = %v, want ErrBadDType", bad, err)
		}
	}
}

func TestDTypeSize(t *testing.T) {
	tests := []struct {
		d     DType
		n     int64
		want  int64
		bytes float64
	}{
		{FP32, 3, 12, 4}, {BF16, 3, 6, 2}, {FP8E5M2, 3, 3, 1}, {INT8, 0, 0, 1},
		{INT4, 4, 2, 0.5}, {INT4, 3, 2, 0.5}, // two per byte, rounded up
	}
	for _, tt := range tests {
		if got := tt.d.Size(tt.n); got != tt.want {
			t.Errorf("%v.Size(%d) = %d, want %d", tt.d, tt.n, got, tt.want)
		}
		if tt.d.Bytes() != tt.bytes {
			t.Errorf("%v.Bytes() = %g, want %g", tt.d, tt.d.Bytes(), tt.bytes)
		}
	}
	var zero DType
	if zero.Valid() || zero.Bits() != 0 || zero.String() != "dtype(0)" {
		t.Errorf("zero DType: valid=%v bits=%d %q", zero.Valid(), zero.Bits(), zero.String())
	}
	var d DType
	if err := d.Set("fp8"); err != nil || d != FP8E4M3 || d.Type() != "dtype" {
		t.Errorf("Set(fp8) = %v, %v", d, err)
	}
	if err := d.Set("nope"); !errors.Is(err, ErrBadDType) || d != FP8E4M3 {
		t.Errorf("Set(nope) = %v, %v; want ErrBadDType and d unchanged", d, err)
	}
}

// TestParseKVDType: every dtype but int4 is a KV cache type; int4 was
// accepted by --kv-dtype and counted without its scales.
func TestParseKVDType(t *testing.T) {
	for _, ok := range []string{"bf16", "fp16", "fp32", "fp8", "fp8_e5m2", "int8", "BF16"} {
		if _, err := ParseKVDType(ok); err != nil {
			t.Errorf("ParseKVDType(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"int4", "fp7", ""} {
		_, err := ParseKVDType(bad)
		if !errors.Is(err, ErrBadDType) || !strings.Contains(err.Error(), "int8") {
			t.Errorf("ParseKVDType(%q): %v, want ErrBadDType listing the KV types", bad, err)
		}
	}
}

// TestDTypeNames: one name for every element type, each one ParseDType
// takes back to it; the KV cache types are among them.
func TestDTypeNames(t *testing.T) {
	names := DTypeNames()
	seen := map[DType]string{}
	for _, n := range names {
		d, err := ParseDType(n)
		if err != nil {
			t.Errorf("ParseDType(%q): %v", n, err)
			continue
		}
		if prev, ok := seen[d]; ok {
			t.Errorf("%q and %q both name %v", prev, n, d)
		}
		seen[d] = n
	}
	for d := DType(0); d < 255; d++ {
		if _, ok := seen[d]; d.Valid() != ok {
			t.Errorf("%v: valid %v, named %v", d, d.Valid(), ok)
		}
	}
	for _, n := range KVDTypeNames() {
		if !slices.Contains(names, n) {
			t.Errorf("KV cache type %q is not among DTypeNames %v", n, names)
		}
	}
}
