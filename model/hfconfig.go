// Hugging Face config.json reader. See package model for the overview.

package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxConfigBytes bounds what ReadHFConfig reads. Real config.json files are
// 1–10 KB (DeepSeek-V3's, the largest we know, is about 1.7 KB); 1 MiB
// leaves room for long comments-as-fields and stops a wrong path (a weights
// file) from being read whole.
const MaxConfigBytes = 1 << 20

// ErrBadConfig is returned (wrapped) by ReadHFConfig for input that is not a
// usable config.json. The message names the file and the field, or the byte
// offset of a JSON syntax error.
var ErrBadConfig = errors.New("bad config")

// families are the model_type values ReadHFConfig understands. Others are
// rejected rather than guessed at: a MoE or hybrid model read as dense
// would get a wrong parameter count without any sign of it.
var families = []string{"deepseek_v2", "deepseek_v3", "llama", "mistral", "opt", "qwen2", "qwen3"}

// ReadHFConfig reads a Hugging Face config.json (at most MaxConfigBytes) and
// returns the model it describes, named name (used in errors too; pass the
// file path). It reads:
//
//   - model_type, which must be one of deepseek_v2, deepseek_v3, llama,
//     mistral, opt, qwen2, qwen3;
//   - num_hidden_layers, num_attention_heads, hidden_size, vocab_size,
//     max_position_embeddings and intermediate_size (OPT: ffn_dim): required;
//   - num_key_value_heads (default: num_attention_heads, as for OPT and
//     Llama-2) and head_dim (default: hidden_size ÷ num_attention_heads,
//     which must then divide evenly);
//   - torch_dtype, or dtype as newer transformers write it (default bf16),
//     overridden by quantization_config (quant_method "fp8" → fp8 with its
//     fmt, "fbgemm_fp8" → fp8 e4m3; a "bits" of 4 or 8 → int4 or int8; bitsandbytes' load_in_4bit and
//     load_in_8bit; compressed-tensors' config_groups, which must agree);
//     other bit widths and methods that state no width are errors;
//   - for a quantized model, the modules it keeps in 16 bits:
//     quantization_config's modules_to_not_convert, ignore, ignored_layers,
//     llm_int8_skip_modules or exclude (ParseUnquantized's forms; a module
//     it cannot model, such as one MLP projection, is an error);
//   - tie_word_embeddings (default true for OPT, false otherwise, as the
//     transformers config classes have it) and attention_bias; Qwen2 always
//     has q/k/v biases;
//   - for deepseek_*: kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
//     v_head_dim (required), q_lora_rank (null or absent = 0), and, when
//     n_routed_experts is set, num_experts_per_tok, n_shared_experts,
//     moe_intermediate_size, first_k_dense_replace (required) and
//     moe_layer_freq (must be 1 if present).
//
// Integers may be written as 28 or 28.0; null counts as absent. Other
// fields are ignored. The file must be UTF-8 text (a UTF-8 byte order mark
// is skipped; UTF-16, compressed or binary data is named as such) with no
// key given twice, and the model must take at least MinKVBytesPerToken of
// KV cache per token. Params is EstimateParams of the result. Every error
// wraps ErrBadConfig.
func ReadHFConfig(r io.Reader, name string) (Model, error) {
	r, err := untrusted.Sniff(r, untrusted.CheckJSONStart) // random bytes or UTF-16 fail in the first 4 KiB
	if err != nil {
		return Model{}, fmt.Errorf("%w: %s: %w", ErrBadConfig, name, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return Model{}, fmt.Errorf("%w: %s: %w", ErrBadConfig, name, err)
	}
	if len(data) > MaxConfigBytes {
		return Model{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrBadConfig, name, MaxConfigBytes)
	}
	body := untrusted.TrimBOM(data)
	bom := int64(len(data) - len(body))
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Model{}, fmt.Errorf("%w: %s: JSON syntax error at byte %d: %w", ErrBadConfig, name, bom+se.Offset, err)
		}
		return Model{}, fmt.Errorf("%w: %s: top level is not a JSON object: %w", ErrBadConfig, name, err)
	}
	if raw == nil {
		return Model{}, fmt.Errorf("%w: %s: top level is null, want a JSON object", ErrBadConfig, name)
	}
	// A key given twice would be read as its last value, silently.
	if err := untrusted.CheckJSON(body); err != nil {
		var je *untrusted.JSONError
		if errors.As(err, &je) {
			je.Offset += bom
		}
		return Model{}, fmt.Errorf("%w: %s: %w", ErrBadConfig, name, err)
	}
	c := &cfg{name: name, raw: raw}
	m := c.model()
	if c.err != nil {
		return Model{}, c.err
	}
	p, err := EstimateParams(m)
	if err == nil {
		m.Params = p
		err = m.Validate()
	}
	if err != nil {
		return Model{}, fmt.Errorf("%w: %s: %w", ErrBadConfig, name, err)
	}
	if err := checkRealSize(&m, name); err != nil {
		return Model{}, err
	}
	return m, nil
}

// MinKVBytesPerToken is the least KV cache a config.json's model may take
// per token, at 16 bits on one GPU: 1 KiB. The smallest models of the
// supported families take far more (Qwen2.5-0.5B 12 KiB, SmolLM2-135M
// 22.5 KiB, OPT-125m 36 KiB). Below it is a test fixture or a mistake
// (hidden_size 1), whose paged KV pool would hold more blocks than the
// simulator's block pool allows (kv/blockpool.MaxBlocks, 2^24: reached by
// vLLM's 16-token blocks at 645 bytes per token on the largest GPU
// preset), so that such a config failed deep in the engine, naming
// neither --model nor the file.
const MinKVBytesPerToken = 1 << 10

// checkRealSize refuses a model whose KV cache per token is below
// MinKVBytesPerToken, naming the fields that make it.
func checkRealSize(m *Model, name string) error {
	kv := m.KVBytesPerToken(BF16, 1)
	if kv >= MinKVBytesPerToken {
		return nil
	}
	what := fmt.Sprintf("2 × num_hidden_layers %d × num_key_value_heads %d × head_dim %d × 2 bytes", m.Layers, m.KVHeads, m.HeadDim)
	if m.MLA != nil {
		what = fmt.Sprintf("num_hidden_layers %d × (kv_lora_rank %d + qk_rope_head_dim %d) × 2 bytes", m.Layers, m.MLA.KVLoRARank, m.MLA.QKRopeHeadDim)
	}
	return fmt.Errorf("%w: %s: too small for any real model: its KV cache takes %d bytes per token at 16 bits (%s), less than the %d bytes (model.MinKVBytesPerToken) of any model gpufrag simulates (Qwen2.5-0.5B takes 12288); is this the model's config.json?",
		ErrBadConfig, name, kv, what, MinKVBytesPerToken)
}

// cfg reads fields from a decoded config and keeps the first error.
type cfg struct {
	name string
	raw  map[string]json.RawMessage
	err  error
}

func (c *cfg) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s: field %q: %s", ErrBadConfig, c.name, field, fmt.Sprintf(format, args...))
	}
}

// get returns the raw value of key, or nil when it is absent or null.
func (c *cfg) get(key string) json.RawMessage {
	v := bytes.TrimSpace(c.raw[key])
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// posInt reads an integer in [1, limit]. Absent: def, or an error if required.
func (c *cfg) posInt(key string, required bool, def, limit int) int {
	return c.intFrom(key, required, def, 1, limit)
}

// count reads a required integer in [0, limit] (a count that may be zero).
func (c *cfg) count(key string, limit int) int {
	return c.intFrom(key, true, 0, 0, limit)
}

func (c *cfg) intFrom(key string, required bool, def, lo, limit int) int {
	v := c.get(key)
	if v == nil {
		if required {
			c.fail(key, "missing")
		}
		return def
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(v), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			c.fail(key, "got %.40s, want an integer", v)
			return def
		}
		n = int64(f)
	}
	switch {
	case n < int64(lo) && lo == 1:
		c.fail(key, "must be positive, got %d", n)
		return def
	case n < int64(lo):
		c.fail(key, "must not be negative, got %d", n)
		return def
	case n > int64(limit):
		c.fail(key, "%d is larger than the supported %d", n, limit)
		return def
	}
	return int(n)
}

// str reads a string; absent gives "".
func (c *cfg) str(key string) string {
	v := c.get(key)
	if v == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		c.fail(key, "got %.40s, want a string", v)
	}
	return s
}

// flag reads a boolean; absent gives def.
func (c *cfg) flag(key string, def bool) bool {
	v := c.get(key)
	if v == nil {
		return def
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		c.fail(key, "got %.40s, want true or false", v)
	}
	return b
}

func (c *cfg) model() Model {
	fam := c.str("model_type")
	switch {
	case c.err != nil:
		return Model{}
	case fam == "":
		c.fail("model_type", "missing (want one of %s)", strings.Join(families, ", "))
		return Model{}
	case !slices.Contains(families, fam):
		c.fail("model_type", "%q is not supported (want one of %s)", fam, strings.Join(families, ", "))
		return Model{}
	}
	m := Model{Name: c.name, Family: fam}
	m.Layers = c.posInt("num_hidden_layers", true, 0, maxLayers)
	m.Heads = c.posInt("num_attention_heads", true, 0, maxDim)
	m.Hidden = c.posInt("hidden_size", true, 0, maxDim)
	m.Vocab = c.posInt("vocab_size", true, 0, maxDim)
	m.MaxContext = c.posInt("max_position_embeddings", true, 0, maxContext)
	if fam == "opt" {
		m.Intermediate = c.posInt("ffn_dim", true, 0, maxDim)
		c.posInt("word_embed_proj_dim", false, 0, maxDim) // checked only; see EstimateParams
	} else {
		m.Intermediate = c.posInt("intermediate_size", true, 0, maxDim)
	}
	m.KVHeads = c.posInt("num_key_value_heads", false, m.Heads, maxDim)
	if c.err != nil {
		return Model{}
	}
	if m.Heads%m.KVHeads != 0 {
		c.fail("num_key_value_heads", "%d does not divide num_attention_heads (%d)", m.KVHeads, m.Heads)
	}
	m.HeadDim = c.posInt("head_dim", false, 0, maxDim)
	if m.HeadDim == 0 && c.err == nil {
		if m.Hidden%m.Heads != 0 {
			c.fail("head_dim", "missing, and hidden_size (%d) is not a multiple of num_attention_heads (%d)", m.Hidden, m.Heads)
		}
		m.HeadDim = m.Hidden / m.Heads
	}
	m.TiedEmbeddings = c.flag("tie_word_embeddings", fam == "opt")
	m.QKVBias = fam == "qwen2" || c.flag("attention_bias", false)
	m.WeightDType = c.dtype()
	if m.WeightDType.Bits() < 16 {
		m.Unquantized = c.unquantized()
	}
	if strings.HasPrefix(fam, "deepseek") {
		c.deepseek(&m)
	}
	if c.err == nil {
		if err := m.Unquantized.validate(&m); err != nil {
			c.fail("quantization_config", "%v", err)
		}
	}
	return m
}

func (c *cfg) dtype() DType {
	key := "torch_dtype"
	if c.get(key) == nil {
		key = "dtype"
	}
	d := BF16
	if s := c.str(key); s != "" {
		var err error
		if d, err = ParseDType(s); err != nil {
			c.fail(key, "%v", err)
		}
	}
	q := c.get("quantization_config")
	if q == nil {
		return d
	}
	var qc struct {
		QuantMethod string          `json:"quant_method"`
		Fmt         string          `json:"fmt"`
		Bits        json.RawMessage `json:"bits"`
		LoadIn4Bit  bool            `json:"load_in_4bit"`
		LoadIn8Bit  bool            `json:"load_in_8bit"`
		// compressed-tensors (llm-compressor) states the weights' type per
		// group of layers.
		ConfigGroups map[string]struct {
			Weights *struct {
				NumBits int    `json:"num_bits"`
				Type    string `json:"type"`
			} `json:"weights"`
		} `json:"config_groups"`
	}
	if err := json.Unmarshal(q, &qc); err != nil {
		c.fail("quantization_config", "want an object with quant_method: %v", err)
		return d
	}
	method := strings.ToLower(qc.QuantMethod)
	switch {
	case method == "fp8" && qc.Fmt == "e5m2":
		return FP8E5M2
	case method == "fp8" || method == "fbgemm_fp8":
		return FP8E4M3
	case method == "bitsandbytes" && qc.LoadIn4Bit:
		return INT4
	case method == "bitsandbytes" && qc.LoadIn8Bit:
		return INT8
	case method == "compressed-tensors":
		return c.groupDType(qc.ConfigGroups)
	case qc.Bits != nil:
		switch string(qc.Bits) {
		case "4":
			return INT4
		case "8":
			return INT8
		}
		// GPTQ and AWQ also come in 2 and 3 bits; weights are not modelled
		// below int4, and reading them as bf16 would give 4-8x their size.
		c.fail("quantization_config.bits", "%s is not supported (want 4 or 8; fp8 through quant_method \"fp8\")", qc.Bits)
		return d
	}
	c.fail("quantization_config.quant_method", "%q without bits: the weights' type is unknown (supported: fp8, gptq/awq/... with bits 4 or 8, bitsandbytes with load_in_4bit or load_in_8bit, compressed-tensors); remove quantization_config to read the weights as %s", qc.QuantMethod, d)
	return d
}

// unquantized reads the modules a quantized checkpoint keeps in 16 bits:
// quantization_config's modules_to_not_convert (fbgemm_fp8, bitsandbytes'
// llm_int8_skip_modules), ignore (compressed-tensors, quark's exclude) or
// ignored_layers (vLLM's own fp8 method, AutoFP8's checkpoints).
func (c *cfg) unquantized() Unquantized {
	var qc map[string]json.RawMessage
	if json.Unmarshal(c.get("quantization_config"), &qc) != nil {
		return Unquantized{}
	}
	var u Unquantized
	for _, key := range []string{"modules_to_not_convert", "ignore", "ignored_layers", "llm_int8_skip_modules", "exclude"} {
		v := bytes.TrimSpace(qc[key])
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			c.fail("quantization_config."+key, "want a list of module names: %v", err)
			return Unquantized{}
		}
		for i, e := range list {
			if err := u.add(strings.TrimSpace(e)); err != nil {
				c.fail(fmt.Sprintf("quantization_config.%s[%d]", key, i), "%v", err)
				return Unquantized{}
			}
		}
	}
	u.normalise()
	return u
}

// groupDType is the weights' type of a compressed-tensors config: every
// group must agree (a mixed-precision model is not modelled).
func (c *cfg) groupDType(groups map[string]struct {
	Weights *struct {
		NumBits int    `json:"num_bits"`
		Type    string `json:"type"`
	} `json:"weights"`
}) DType {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	slices.Sort(names)
	var got DType
	for _, n := range names {
		w := groups[n].Weights
		field := "quantization_config.config_groups." + n + ".weights"
		if w == nil {
			c.fail(field, "missing")
			return 0
		}
		var d DType
		switch {
		case w.NumBits == 8 && w.Type == "float":
			d = FP8E4M3
		case w.NumBits == 8 && w.Type == "int":
			d = INT8
		case w.NumBits == 4 && w.Type == "int":
			d = INT4
		default:
			c.fail(field, "%d-bit %s weights are not supported (want 8-bit float or int, or 4-bit int)", w.NumBits, w.Type)
			return 0
		}
		if got != 0 && d != got {
			c.fail(field, "%s weights, %s in another group: mixed precision is not modelled", d, got)
			return 0
		}
		got = d
	}
	if got == 0 {
		c.fail("quantization_config.config_groups", "no group states its weights")
	}
	return got
}

func (c *cfg) deepseek(m *Model) {
	m.MLA = &MLA{
		KVLoRARank:    c.posInt("kv_lora_rank", true, 0, maxDim),
		QKRopeHeadDim: c.posInt("qk_rope_head_dim", true, 0, maxDim),
		QKNopeHeadDim: c.posInt("qk_nope_head_dim", true, 0, maxDim),
		VHeadDim:      c.posInt("v_head_dim", true, 0, maxDim),
		QLoRARank:     c.posInt("q_lora_rank", false, 0, maxDim),
	}
	if c.get("head_dim") == nil {
		m.HeadDim = m.MLA.QKNopeHeadDim + m.MLA.QKRopeHeadDim
	}
	if c.get("n_routed_experts") == nil {
		return
	}
	e := &MoE{Experts: c.posInt("n_routed_experts", true, 0, maxExperts)}
	e.ExpertsPerToken = c.posInt("num_experts_per_tok", true, 0, maxExperts)
	e.ExpertIntermediate = c.posInt("moe_intermediate_size", true, 0, maxDim)
	e.SharedExperts = c.count("n_shared_experts", maxExperts)
	e.DenseLayers = c.count("first_k_dense_replace", maxLayers)
	if f := c.posInt("moe_layer_freq", false, 1, maxLayers); f != 1 {
		c.fail("moe_layer_freq", "%d is not supported (want 1: every layer after first_k_dense_replace is MoE)", f)
	}
	if c.err == nil && e.ExpertsPerToken > e.Experts {
		c.fail("num_experts_per_tok", "%d is more than n_routed_experts (%d)", e.ExpertsPerToken, e.Experts)
	}
	if c.err == nil && e.DenseLayers > m.Layers {
		c.fail("first_k_dense_replace", "%d is more than num_hidden_layers (%d)", e.DenseLayers, m.Layers)
	}
	m.MoE = e
}
