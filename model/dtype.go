// Element types of weights and KV caches. See package model for the overview.

package model

import (
	"errors"
	"fmt"
	"strings"
)

// DType is the storage type of one weight or KV-cache element. The zero
// value is invalid, so an unset field is caught by Model.Validate.
type DType uint8

// Element types. FP8E4M3 and FP8E5M2 have the same size and differ only in
// range and precision, which this package does not model; both are kept so
// that a parsed name prints back as given.
const (
	FP32 DType = iota + 1
	FP16
	BF16
	FP8E4M3
	FP8E5M2
	INT8
	INT4
)

// ErrBadDType is returned (wrapped) by ParseDType for a name it does not know.
var ErrBadDType = errors.New("bad dtype")

var dtypeInfo = [...]struct {
	name string
	bits int
}{
	FP32:    {"fp32", 32},
	FP16:    {"fp16", 16},
	BF16:    {"bf16", 16},
	FP8E4M3: {"fp8_e4m3", 8},
	FP8E5M2: {"fp8_e5m2", 8},
	INT8:    {"int8", 8},
	INT4:    {"int4", 4},
}

// dtypeAliases maps every accepted spelling (lower case) to its DType. The
// spellings cover our own short names, PyTorch/Hugging Face torch_dtype
// values ("bfloat16", "float8_e4m3fn") and vLLM's --kv-cache-dtype values
// ("fp8" means e4m3 there, as here).
var dtypeAliases = map[string]DType{
	"fp32": FP32, "float32": FP32, "float": FP32,
	"fp16": FP16, "float16": FP16, "half": FP16,
	"bf16": BF16, "bfloat16": BF16,
	"fp8": FP8E4M3, "fp8_e4m3": FP8E4M3, "e4m3": FP8E4M3, "float8_e4m3fn": FP8E4M3, "fp8e4m3": FP8E4M3,
	"fp8_e5m2": FP8E5M2, "e5m2": FP8E5M2, "float8_e5m2": FP8E5M2, "fp8e5m2": FP8E5M2,
	"int8": INT8,
	"int4": INT4,
}

// ParseDType parses a dtype name, case-insensitively: fp32, fp16 (float16,
// half), bf16 (bfloat16), fp8 (= fp8_e4m3, e4m3, float8_e4m3fn), fp8_e5m2
// (e5m2), int8, int4.
func ParseDType(s string) (DType, error) {
	if d, ok := dtypeAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("%w: %q (want one of fp32, fp16, bf16, fp8, fp8_e5m2, int8, int4)", ErrBadDType, s)
}

// ParseKVDType parses the element type of a KV cache: a name ParseDType
// knows, except int4. Serving engines keep KV in the model's dtype (fp32,
// fp16 or bf16; vLLM's kv_cache_dtype "auto"), in fp8 (vLLM's fp8,
// fp8_e4m3, fp8_e5m2) or int8 (lmdeploy, TensorRT-LLM); 4-bit KV caches
// (lmdeploy's quant_policy=4, KIVI) keep per-group scales beside the
// elements, which KVBytesPerToken does not count, so they are refused
// rather than under-counted.
func ParseKVDType(s string) (DType, error) {
	d, err := ParseDType(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q (want a KV cache type: bf16, fp16, fp32, fp8, fp8_e5m2 or int8)", ErrBadDType, s)
	}
	if d == INT4 {
		return 0, fmt.Errorf("%w: %q: 4-bit KV caches are not modelled (their per-group scales are not counted); want bf16, fp16, fp32, fp8, fp8_e5m2 or int8", ErrBadDType, s)
	}
	return d, nil
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d >= FP32 && d <= INT4 }

// String returns the canonical name ("bf16", "fp8_e4m3"), or "dtype(N)" for
// an invalid value.
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// Bits is the size of one element in bits (4 for INT4, 0 if invalid).
func (d DType) Bits() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].bits
}

// Bytes is the size of one element in bytes: 0.5 for INT4, whole numbers
// for the others. Byte counts are computed with Size, which stays in
// integers; Bytes is for display.
func (d DType) Bytes() float64 { return float64(d.Bits()) / 8 }

// Size is the number of bytes that n elements take: ceil(n × Bits ÷ 8).
// Packing is assumed dense (two INT4 values per byte); quantization scales
// and zero points are not counted.
func (d DType) Size(n int64) int64 {
	b := int64(d.Bits())
	return (n*b + 7) / 8
}

// Set implements pflag.Value, so a DType can be a command-line flag.
func (d *DType) Set(s string) error {
	v, err := ParseDType(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Type implements pflag.Value.
func (d *DType) Type() string { return "dtype" }

// DTypeNames are the element types ParseDType takes, one name each, in
// the order of the constants: fp32, fp16, bf16, fp8 (fp8_e4m3 under the
// short name vLLM and this package's messages use), fp8_e5m2, int8, int4
// (for hints and shell completion).
func DTypeNames() []string {
	out := make([]string, 0, len(dtypeInfo))
	for d := FP32; d.Valid(); d++ {
		name := d.String()
		if d == FP8E4M3 {
			name = "fp8"
		}
		out = append(out, name)
	}
	return out
}

// KVDTypeNames are the KV cache types ParseKVDType takes (for hints).
func KVDTypeNames() []string { return []string{"bf16", "fp16", "fp32", "fp8", "fp8_e5m2", "int8"} }
