package model

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

func readTestdata(t *testing.T, file string) Model {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ReadHFConfig(f, file)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sharedConfig returns the path of a file under ../shared/data/models, or
// skips the test when the shared checkout is absent (it lives beside the
// repository in the project workspace, not in the repository). The copies
// in testdata keep the same checks always on.
func sharedConfig(t *testing.T, file string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "data", "models", file)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared model configs not present (%v); testdata/%s covers the same input", err, file)
	}
	return p
}

func TestReadHFConfigTestdata(t *testing.T) {
	tests := []struct {
		file       string
		family     string
		kvBF16     int64 // KV bytes per token, bf16, TP 1 (derivations in testdata/README.md)
		weight     DType
		params     float64 // published total
		hasMLA     bool
		hasMoE     bool
		maxContext int
	}{
		{"qwen2.5-7b.config.json", "qwen2", 57344, BF16, 7.61e9, false, false, 32768},
		{"llama-3-8b.synthetic.json", "llama", 131072, BF16, 8.03e9, false, false, 8192},
		{"opt-13b.synthetic.json", "opt", 819200, FP16, 13.0e9, false, false, 2048},
		{"deepseek-v3.synthetic.json", "deepseek_v3", 70272, FP8E4M3, 671e9, true, true, 163840},
		{"llama-3.1-405b-fp8.synthetic.json", "llama", 516096, FP8E4M3, 405e9, false, false, 131072},
		// DeepSeek-V2-Lite card: 15.7B total, 2.4B active.
		{"deepseek-v2-lite.synthetic.json", "deepseek_v2", 31104, BF16, 15.7e9, true, true, 163840},
	}
	for _, tt := range tests {
		m := readTestdata(t, tt.file)
		if m.Family != tt.family || m.WeightDType != tt.weight || (m.MLA != nil) != tt.hasMLA ||
			(m.MoE != nil) != tt.hasMoE || m.MaxContext != tt.maxContext || m.Name != tt.file {
			t.Errorf("%s: got %+v", tt.file, m)
		}
		if got := m.KVBytesPerToken(BF16, 1); got != tt.kvBF16 {
			t.Errorf("%s: KV bytes/token = %d, want %d", tt.file, got, tt.kvBF16)
		}
		if rel := (float64(m.Params) - tt.params) / tt.params; rel > 0.02 || rel < -0.02 {
			t.Errorf("%s: Params = %d, published %.3g", tt.file, m.Params, tt.params)
		}
	}
	// Meta's FP8 405B lists every layer's self_attn one by one, and layers
	// 0 and 125 whole: the same split as self_attn for all.
	big := readTestdata(t, "llama-3.1-405b-fp8.synthetic.json")
	want := big
	want.Unquantized = Unquantized{Attention: true, Layers: []int{0, 125}}
	if big.Split16() != want.Split16() || big.Split16().Linear == 0 || !slices.Equal(big.Unquantized.Layers, []int{0, 125}) {
		t.Errorf("405b fp8: Unquantized %v, Split16 %+v, want %+v", big.Unquantized, big.Split16(), want.Split16())
	}
	lite := readTestdata(t, "deepseek-v2-lite.synthetic.json")
	if lite.MLA.QLoRARank != 0 {
		t.Errorf("q_lora_rank null: QLoRARank = %d, want 0", lite.MLA.QLoRARank)
	}
	if a := float64(lite.ActiveParams()); a < 2.3e9 || a > 2.5e9 {
		t.Errorf("deepseek-v2-lite ActiveParams = %.3g, want ≈ 2.4e9", a)
	}
}

// TestReadHFConfigShared reads the project's shared copy of the Qwen2.5-7B
// config; it must give what the testdata copy gives.
func TestReadHFConfigShared(t *testing.T) {
	p := sharedConfig(t, "qwen2.5-7b.config.json")
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	// 2 × 28 × 4 × 128 × 2 = 57,344, as the shared README says.
	if got := m.KVBytesPerToken(BF16, 1); got != 57344 {
		t.Errorf("KV bytes/token = %d, want 57,344", got)
	}
	if want := readTestdata(t, "qwen2.5-7b.config.json"); m.Params != want.Params || m.HeadDim != 128 {
		t.Errorf("shared copy differs from testdata: %+v", m)
	}
}

func TestReadHFConfigErrors(t *testing.T) {
	const llama = `"model_type":"llama","num_hidden_layers":4,"num_attention_heads":4,"hidden_size":64,` +
		`"vocab_size":100,"max_position_embeddings":128,"intermediate_size":128`
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"syntax", `{"model_type": "llama",}`, []string{"cfg.json", "syntax error at byte 24"}},
		{"truncated", `{"model_type": "llama"`, []string{"syntax error at byte 22"}},
		{"trailing garbage", `{` + llama + `} x`, []string{"syntax error at byte"}},
		{"empty", ``, []string{"syntax error at byte 0"}},
		{"array", `[1,2]`, []string{"not a JSON object"}},
		{"null", `null`, []string{"top level is null"}},
		{"no model_type", `{"hidden_size": 64}`, []string{`"model_type"`, "missing"}},
		{"model_type number", `{"model_type": 3}`, []string{`"model_type"`, "want a string"}},
		{"unsupported family", `{"model_type": "mixtral"}`, []string{`"mixtral" is not supported`, "qwen2"}},
		{"missing layers", `{"model_type":"llama","num_attention_heads":4}`, []string{`"num_hidden_layers"`, "missing"}},
		{"zero layers", `{` + strings.Replace(llama, `"num_hidden_layers":4`, `"num_hidden_layers":0`, 1) + `}`,
			[]string{`"num_hidden_layers"`, "must be positive, got 0"}},
		{"negative hidden", `{` + strings.Replace(llama, `"hidden_size":64`, `"hidden_size":-64`, 1) + `}`,
			[]string{`"hidden_size"`, "must be positive"}},
		{"fractional heads", `{` + strings.Replace(llama, `"num_attention_heads":4`, `"num_attention_heads":4.5`, 1) + `}`,
			[]string{`"num_attention_heads"`, "want an integer"}},
		{"string heads", `{` + strings.Replace(llama, `"num_attention_heads":4`, `"num_attention_heads":"4"`, 1) + `}`,
			[]string{`"num_attention_heads"`, "want an integer"}},
		{"huge vocab", `{` + strings.Replace(llama, `"vocab_size":100`, `"vocab_size":1e12`, 1) + `}`,
			[]string{`"vocab_size"`, "larger than the supported"}},
		{"kv heads not divisor", `{` + llama + `,"num_key_value_heads":3}`, []string{`"num_key_value_heads"`, "does not divide"}},
		{"head dim undecidable", `{` + strings.Replace(llama, `"hidden_size":64`, `"hidden_size":66`, 1) + `}`,
			[]string{`"head_dim"`, "not a multiple"}},
		{"bad dtype", `{` + llama + `,"torch_dtype":"float64"}`, []string{`"torch_dtype"`, "bad dtype"}},
		{"bad tie", `{` + llama + `,"tie_word_embeddings":"yes"}`, []string{`"tie_word_embeddings"`, "true or false"}},
		{"opt needs ffn_dim", `{"model_type":"opt","num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64,` +
			`"vocab_size":100,"max_position_embeddings":128,"intermediate_size":128}`, []string{`"ffn_dim"`, "missing"}},
		{"mla missing rank", `{"model_type":"deepseek_v3",` + llama[len(`"model_type":"llama",`):] + `,"qk_rope_head_dim":64,` +
			`"qk_nope_head_dim":128,"v_head_dim":128}`, []string{`"kv_lora_rank"`, "missing"}},
		{"moe top-k", `{"model_type":"deepseek_v3",` + llama[len(`"model_type":"llama",`):] + `,"kv_lora_rank":32,"qk_rope_head_dim":8,` +
			`"qk_nope_head_dim":8,"v_head_dim":8,"n_routed_experts":4,"num_experts_per_tok":5,"n_shared_experts":0,` +
			`"moe_intermediate_size":16,"first_k_dense_replace":0}`, []string{`"num_experts_per_tok"`, "more than n_routed_experts"}},
		{"moe layer freq", `{"model_type":"deepseek_v3",` + llama[len(`"model_type":"llama",`):] + `,"kv_lora_rank":32,"qk_rope_head_dim":8,` +
			`"qk_nope_head_dim":8,"v_head_dim":8,"n_routed_experts":4,"num_experts_per_tok":2,"n_shared_experts":0,` +
			`"moe_intermediate_size":16,"first_k_dense_replace":0,"moe_layer_freq":2}`, []string{`"moe_layer_freq"`, "not supported"}},
		{"moe dense layers", `{"model_type":"deepseek_v3",` + llama[len(`"model_type":"llama",`):] + `,"kv_lora_rank":32,"qk_rope_head_dim":8,` +
			`"qk_nope_head_dim":8,"v_head_dim":8,"n_routed_experts":4,"num_experts_per_tok":2,"n_shared_experts":-1,` +
			`"moe_intermediate_size":16,"first_k_dense_replace":0}`, []string{`"n_shared_experts"`, "must not be negative"}},
		// GPTQ in 3 bits was read as bf16 weights, 5x their size, without a word.
		{"3-bit gptq", `{` + llama + `,"quantization_config":{"quant_method":"gptq","bits":3}}`,
			[]string{`"quantization_config.bits"`, "3 is not supported", "want 4 or 8"}},
		{"method without bits", `{` + llama + `,"quantization_config":{"quant_method":"hqq"}}`,
			[]string{`"quantization_config.quant_method"`, `"hqq" without bits`}},
		{"mixed compressed-tensors", `{` + llama + `,"quantization_config":{"quant_method":"compressed-tensors","config_groups":{` +
			`"group_0":{"weights":{"num_bits":8,"type":"float"}},"group_1":{"weights":{"num_bits":4,"type":"int"}}}}}`,
			[]string{"config_groups.group_1.weights", "mixed precision"}},
		{"an MLP projection kept", `{` + llama + `,"quantization_config":{"quant_method":"fp8","modules_to_not_convert":["lm_head","model.layers.1.mlp.down_proj"]}}`,
			[]string{`"quantization_config.modules_to_not_convert[1]"`, `"model.layers.1.mlp.down_proj" is not modelled`}},
		{"a layer past the last", `{` + llama + `,"quantization_config":{"quant_method":"compressed-tensors","ignore":["model.layers.4"],` +
			`"config_groups":{"group_0":{"weights":{"num_bits":8,"type":"float"}}}}}`,
			[]string{`"quantization_config"`, "layer 4, but the model has 4 layers"}},
		{"ignore not a list", `{` + llama + `,"quantization_config":{"quant_method":"fp8","ignore":"lm_head"}}`,
			[]string{`"quantization_config.ignore"`, "want a list of module names"}},
		{"too large", `{"model_type":"llama","pad":"` + strings.Repeat("x", MaxConfigBytes) + `"}`, []string{"larger than 1048576 bytes"}},
		// Issue 28: UTF-16 read as "invalid character 'ÿ'" where the trace
		// readers name it; a key given twice was read as its last value; a
		// model far smaller than any real one failed later in the engine,
		// naming neither the flag nor the file.
		{"UTF-16", utf16LE(`{` + llama + `}`), []string{"cfg.json: line 1: not a text file: UTF-16 text: convert it to UTF-8 first"}},
		{"gzip", "\x1f\x8b\x08\x00", []string{"gzip-compressed data"}},
		{"a key twice", `{` + llama + `,"num_hidden_layers":64}`, []string{fmt.Sprintf(`byte %d: $: key "num_hidden_layers" appears twice`, 1+len(llama)+1)}},
		{"keys differing in case", `{` + llama + `,"Num_Hidden_Layers":64}`, []string{`differ only in case`}},
		{"tiny", `{"model_type":"llama","num_hidden_layers":1,"num_attention_heads":1,"hidden_size":1,"vocab_size":1,` +
			`"max_position_embeddings":1,"intermediate_size":1}`,
			[]string{"cfg.json: too small for any real model: its KV cache takes 4 bytes per token at 16 bits (2 × num_hidden_layers 1 × num_key_value_heads 1 × head_dim 1 × 2 bytes)"}},
		{"tiny MLA", `{"model_type":"deepseek_v3",` + llama[len(`"model_type":"llama",`):] + `,"kv_lora_rank":32,"qk_rope_head_dim":8,` +
			`"qk_nope_head_dim":8,"v_head_dim":8}`, []string{"320 bytes per token", "num_hidden_layers 4 × (kv_lora_rank 32 + qk_rope_head_dim 8)"}},
	}
	for _, tt := range tests {
		_, err := ReadHFConfig(strings.NewReader(tt.in), "cfg.json")
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: err = %v, want ErrBadConfig", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
	for _, tc := range []struct {
		quant string
		want  DType
	}{
		{`{"quant_method":"fp8"}`, FP8E4M3},
		{`{"quant_method":"fp8","fmt":"e5m2"}`, FP8E5M2},
		{`{"quant_method":"awq","bits":4}`, INT4},
		{`{"quant_method":"gptq","bits":8}`, INT8},
		{`{"quant_method":"bitsandbytes","load_in_4bit":true}`, INT4},
		{`{"quant_method":"bitsandbytes","load_in_8bit":true}`, INT8},
		{`{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":8,"type":"float"}}}}`, FP8E4M3},
		{`{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":4,"type":"int"}}}}`, INT4},
	} {
		m, err := ReadHFConfig(strings.NewReader(`{`+llama+`,"quantization_config":`+tc.quant+`}`), "q.json")
		if err != nil || m.WeightDType != tc.want {
			t.Errorf("quantization_config %s: weights %v, %v; want %v", tc.quant, m.WeightDType, err, tc.want)
		}
	}
	// vLLM's own fp8 method (AutoFP8's checkpoints) lists the modules it
	// leaves in 16 bits as ignored_layers (Fp8Config.from_config).
	ig, err := ReadHFConfig(strings.NewReader(`{`+llama+`,"quantization_config":{"quant_method":"fp8","activation_scheme":"static",`+
		`"ignored_layers":["lm_head","model.layers.2.self_attn.q_proj","model.layers.2.self_attn.k_proj"]}}`), "q.json")
	if err != nil || ig.Unquantized.String() != "layers.2.self_attn" {
		t.Errorf("fp8 ignored_layers: Unquantized %q, %v; want layers.2.self_attn", ig.Unquantized, err)
	}
	if _, err := ReadHFConfig(strings.NewReader(`{`+llama+`,"quantization_config":{"quant_method":"fp8","ignored_layers":["model.layers.1.mlp.up_proj"]}}`), "q.json"); err == nil ||
		!strings.Contains(err.Error(), `"quantization_config.ignored_layers[0]"`) {
		t.Errorf("fp8 ignored_layers with an MLP projection: %v, want an error naming quantization_config.ignored_layers[0]", err)
	}
	// A UTF-8 byte order mark is skipped (Windows editors write one), and
	// a syntax error after it is at its byte in the file.
	if _, err := ReadHFConfig(strings.NewReader("\uFEFF{"+llama+"}"), "bom.json"); err != nil {
		t.Errorf("config with a UTF-8 BOM: %v", err)
	}
	_, plain := ReadHFConfig(strings.NewReader("{"+llama+",}"), "bom.json")
	_, after := ReadHFConfig(strings.NewReader("\uFEFF{"+llama+",}"), "bom.json")
	if want := fmt.Sprintf("at byte %d", 1+len(llama)+2); plain == nil || !strings.Contains(plain.Error(), want) ||
		after == nil || !strings.Contains(after.Error(), fmt.Sprintf("at byte %d", 3+1+len(llama)+2)) {
		t.Errorf("syntax error: %v; after a BOM: %v", plain, after)
	}
	// At the bound: 1 KiB per token.
	if m, err := ReadHFConfig(strings.NewReader(`{`+llama+`}`), "ok.json"); err != nil || m.KVBytesPerToken(BF16, 1) != MinKVBytesPerToken {
		t.Errorf("config of %d KV bytes per token: %v", MinKVBytesPerToken, err)
	}
	// The minimal llama config itself is fine: defaults fill KV heads, head dim, dtype.
	m, err := ReadHFConfig(strings.NewReader(`{`+strings.Replace(llama, `"num_hidden_layers":4`, `"num_hidden_layers":4.0`, 1)+`,"q_lora_rank":null}`), "ok.json")
	if err != nil || m.KVHeads != 4 || m.HeadDim != 16 || m.WeightDType != BF16 || m.TiedEmbeddings {
		t.Errorf("minimal config: %+v, %v", m, err)
	}
}

func TestLoad(t *testing.T) {
	if m, err := Load("QWEN2.5-72B"); err != nil || m.Name != "qwen2.5-72b" {
		t.Errorf("Load(preset) = %q, %v", m.Name, err)
	}
	p := filepath.Join("testdata", "llama-3-8b.synthetic.json")
	if m, err := Load(p); err != nil || m.Name != p || m.Layers != 32 {
		t.Errorf("Load(file) = %+v, %v", m, err)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "opt-13b.synthetic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Load(dir); err != nil || m.Family != "opt" {
		t.Errorf("Load(dir) = %+v, %v", m, err)
	}
	_, err = Load("no-such-model")
	if !errors.Is(err, ErrUnknownModel) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "llama-3-8b") {
		t.Errorf("Load(unknown): err = %v, want ErrUnknownModel + ErrNotExist listing presets", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"model_type":"llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load(bad): err = %v, want ErrBadConfig naming the file", err)
	}
}

// FuzzReadHFConfig: any input either fails with ErrBadConfig or gives a
// model that passes Validate and whose sizes can be computed at every TP
// ValidateTP accepts, without panics or overflow.
func FuzzReadHFConfig(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed configs: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"model_type":"opt"}`))
	f.Add([]byte(`{}`))
	// Issue 13's cases: quantization widths that were read as bf16, and the
	// one-layer, hidden-size-1 model that made a 1.2e9-block paged pool.
	const tiny = `{"model_type":"llama","num_hidden_layers":1,"num_attention_heads":1,"hidden_size":1,` +
		`"vocab_size":10,"max_position_embeddings":128,"intermediate_size":1`
	f.Add([]byte(tiny + `}`))
	f.Add([]byte(tiny + `,"quantization_config":{"quant_method":"gptq","bits":3}}`))
	f.Add([]byte(tiny + `,"quantization_config":{"quant_method":"compressed-tensors","config_groups":{"g":{"weights":{"num_bits":8,"type":"float"}}}}}`))
	// Issue 28: UTF-16, a UTF-8 byte order mark, a key given twice.
	f.Add([]byte(utf16LE(tiny + `}`)))
	f.Add([]byte("\uFEFF" + tiny + `}`))
	f.Add([]byte(tiny + `,"num_hidden_layers":2}`))
	// Issue 28: random bytes after "{", UTF-16.
	f.Add([]byte("{\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte("\xff\xfe{\x00\"\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadHFConfig(strings.NewReader(string(data)), "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error does not wrap ErrBadConfig: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted model fails Validate: %v", err)
		}
		for _, tp := range []int{1, 2, 8, 64} {
			if m.ValidateTP(tp) != nil {
				continue
			}
			if kv := m.KVBytesPerToken(FP32, tp); kv <= 0 {
				t.Fatalf("tp=%d: KV bytes/token = %d", tp, kv)
			}
			if w := m.WeightBytes(tp); w <= 0 {
				t.Fatalf("tp=%d: weight bytes = %d", tp, w)
			}
		}
		if a := m.ActiveParams(); a < 0 || a > m.Params {
			t.Fatalf("ActiveParams = %d outside [0, %d]", a, m.Params)
		}
	})
}

// utf16LE encodes s as UTF-16LE with a byte order mark, as Windows
// PowerShell's Out-File writes it.
func utf16LE(s string) string {
	b := []byte{0xff, 0xfe}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

// TestConfigPath: the file Load reads, which outputs are compared with (a
// --model directory's config.json must not be overwritten by --out).
func TestConfigPath(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ ref, want string }{
		{"", ""}, {"llama-3-8b", ""}, {"LLAMA-3-8B", ""},
		{dir, filepath.Join(dir, "config.json")},
		{filepath.Join(dir, "x.json"), filepath.Join(dir, "x.json")},
	} {
		if got := ConfigPath(c.ref); got != c.want {
			t.Errorf("ConfigPath(%q) = %q, want %q", c.ref, got, c.want)
		}
	}
}

// TestReadHFConfigRandomBytes (issue 28, item 10): random bytes, bare or
// after the start of a config.json, are refused within the first 4 KiB
// (they were read to MaxConfigBytes and refused as "larger than 1048576
// bytes"); UTF-16 is named.
func TestReadHFConfigRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, err := ReadHFConfig(r, name)
		return err
	}, `{"architectures": ["LlamaForCausalLM"], "model_type": "`)
	_, err := ReadHFConfig(strings.NewReader("\xff\xfe{\x00}\x00"), "config.json")
	if err == nil || !strings.Contains(err.Error(), "config.json: line 1: not a text file: UTF-16 text: convert it to UTF-8 first") {
		t.Errorf("UTF-16: %v", err)
	}
}

// TestReadHFConfigSkipModules: a bitsandbytes 4-bit config whose skip
// list names whole MLPs and attention blocks of some layers, and modules
// outside the text decoder (a multimodal model's projector), keeps those
// layers' parts in 16 bits and ignores the rest.
func TestReadHFConfigSkipModules(t *testing.T) {
	const llama = `"model_type":"llama","num_hidden_layers":4,"num_attention_heads":4,"hidden_size":64,` +
		`"vocab_size":100,"max_position_embeddings":128,"intermediate_size":128`
	m, err := ReadHFConfig(strings.NewReader(`{`+llama+`,"quantization_config":{"quant_method":"bitsandbytes","load_in_4bit":true,`+
		`"llm_int8_skip_modules":["lm_head","multi_modal_projector","merger","modality_projection","model.layers.0.self_attn",`+
		`"model.layers.0.mlp","model.layers.2.mlp"]}}`), "skip.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.WeightDType != INT4 || m.Unquantized.String() != "layers.2.mlp,layers.0" {
		t.Errorf("weights %v, unquantized %q; want int4 with layers.2.mlp,layers.0", m.WeightDType, m.Unquantized)
	}
	// 16-bit linear parameters: layer 0 whole (attention 4 × 64 × 64 and
	// MLP 3 × 64 × 128) and layer 2's MLP.
	if got, want := m.Split16().Linear, int64(4*64*64+2*3*64*128); got != want {
		t.Errorf("Split16().Linear = %d, want %d", got, want)
	}
}
