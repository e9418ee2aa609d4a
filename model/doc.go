// Package model describes LLMs and GPUs as the simulator needs them: how
// many bytes of KV cache a token costs, how many bytes the weights take, how
// many FLOPs a token needs, and how much memory, bandwidth and compute a GPU
// has. It is deterministic and does no I/O except ReadHFConfig (from an
// io.Reader) and Load (which opens a config.json for the CLI's --model flag).
//
// # Models
//
// A Model comes from a preset (Preset, PresetNames: Llama-3 8B/70B/405B,
// Llama-3.1 8B/70B, Llama-2 13B, OPT-13B, Qwen2.5 7B/14B/72B, DeepSeek-V3)
// or from a Hugging Face config.json (ReadHFConfig; model types llama,
// mistral, qwen2, qwen3, opt, deepseek_v2, deepseek_v3). Load takes either.
// Each preset cites the repository whose config.json it copies.
//
// # Formulas
//
// KV cache per token on each GPU of a tp-way tensor-parallel group
// (Model.KVBytesPerToken):
//
//	GQA/MHA: 2 × layers × max(1, kv_heads ÷ tp) × head_dim × bytes(kv dtype)
//	MLA:     layers × (kv_lora_rank + qk_rope_head_dim) × bytes(kv dtype)
//
// Examples (bf16, tp = 1): Llama-3-8B 2 × 32 × 8 × 128 × 2 = 131,072 B;
// Qwen2.5-7B 2 × 28 × 4 × 128 × 2 = 57,344 B; DeepSeek-V3 61 × 576 × 2 =
// 70,272 B. An fp8 or int8 KV cache halves the bf16 figure.
//
// Weights per GPU (Model.WeightBytes): ceil(params × bits(weight dtype) ÷ 8 ÷ tp)
// for a 16-bit model; a quantized one (under 16 bits) keeps its embedding,
// lm_head, norms and what Model.Unquantized names in 16 bits (Split16).
// FLOPs per token (Model.FLOPsPerToken): 2 × ActiveParams, attention over
// the context excluded. Parameters (EstimateParams) are counted from the
// dimensions; the formula is on EstimateParams and reproduces the
// checkpoints' exact counts for Llama-2-13B, Llama-3-8B/70B and Qwen2.5-7B.
//
// # Decisions
//
//   - Tensor parallelism divides KV heads, as vLLM does:
//     max(1, kv_heads ÷ tp) per GPU. Past tp = kv_heads the heads are
//     replicated and per-GPU KV stops shrinking (Llama-3-70B: 40,960 B per
//     token at tp 8 and at tp 16). ValidateTP applies vLLM's divisibility rules.
//   - MLA KV is not divided by tp. The cached latent is shared by all heads;
//     tensor parallelism splits heads, so vLLM and SGLang keep the whole
//     latent cache on every rank (SGLang's data-parallel attention avoids
//     that, but it is not tensor parallelism). Per-GPU MLA KV is therefore
//     the full figure at any tp.
//   - Weights are split evenly over tp (embeddings and projections are
//     sharded; the replicated norms are < 0.01%).
//   - Scales of quantized KV or weights (fp8 block scales, FlashMLA's fp8
//     layout of 656 B per layer and token) are not counted; neither are
//     sliding windows (every layer attends over the whole context).
//   - A quantized model's embedding, lm_head and norms stay in 16 bits:
//     vLLM's and SGLang's FP8, INT8 and INT4 methods quantize the decoder's
//     linear layers only, and checkpoints list lm_head among the modules
//     not converted. For Llama-3-8B in FP8 that is 1.05e9 parameters, 2.1 GB
//     of its 9.1 GB (1.05 GB more than all in FP8).
//     Anything more a checkpoint keeps (Meta's Llama-3.1-405B-FP8: every
//     self_attn and layers 0 and 125, a fifth of its parameters) is named
//     by Model.Unquantized, read from quantization_config's
//     modules_to_not_convert or ignore.
//   - DeepSeek-V3's preset stores fp8 weights, as released, and leaves out
//     the 14B-parameter MTP module, which serving engines load only for
//     speculative decoding.
//   - GPU capacity is nvidia-smi's memory.total (MiB × 2^20), not the
//     marketing GB: see GPU. Bandwidth and FLOP/s are datasheet peaks;
//     FLOP/s are dense (no 2:4 sparsity). T4 has no bf16 and carries its
//     fp16 figure.
//
// # Invariants
//
//   - A Model returned by Preset, ReadHFConfig or Load passes Validate:
//     positive dimensions within bounds that keep every byte count inside
//     int64, KVHeads divides Heads, Params > 0, a valid WeightDType.
//   - Params == EstimateParams for presets and read configs; ActiveParams ≤ Params.
//   - A model ReadHFConfig or Load reads takes at least MinKVBytesPerToken
//     of KV cache per token at 16 bits (a smaller one is no real model and
//     would exceed the simulator's block pool).
//   - KVBytesPerToken(kv, tp) is non-increasing in tp, equals the tp = 1
//     value for MLA, and scales with kv.Bits().
//   - Presets and GPU tables are never modified; Preset returns copies.
//   - Every error wraps one sentinel of this package (ErrBadDType,
//     ErrBadModel, ErrBadTP, ErrBadConfig, ErrUnknownModel, ErrUnknownGPU)
//     and names the offending input, file and field.
package model
