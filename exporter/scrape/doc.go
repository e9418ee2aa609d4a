// Package scrape reads the KV-cache state of vLLM and SGLang servers from
// their Prometheus /metrics endpoints and returns it as plain structs, one
// Instance per model_name and label set. It exports nothing itself; package
// exporter adapts Instances into its samples.
//
// Parse reads the Prometheus text exposition format (version 0.0.4, what both
// servers' prometheus_client serves by default) with
// github.com/prometheus/common/expfmt; Fetch GETs a URL with a context and a
// body-size bound, then parses.
//
// # Metric mapping
//
// vLLM (V1 engine names first, the older names as fallbacks):
//
//	Usage          vllm:kv_cache_usage_perc, else vllm:gpu_cache_usage_perc
//	               (a 0..1 fraction despite "perc")
//	Blocks         label num_gpu_blocks of vllm:cache_config_info (the pool
//	               size including vLLM's null block)
//	BlockSize      label block_size of vllm:cache_config_info (tokens)
//	Preemptions    vllm:num_preemptions_total, else vllm:num_preemptions
//	PrefixQueries  vllm:prefix_cache_queries_total, else
//	               vllm:gpu_prefix_cache_queries_total (tokens, counter)
//	PrefixHits     vllm:prefix_cache_hits_total, else
//	               vllm:gpu_prefix_cache_hits_total (tokens, counter)
//
// vllm:cache_config_info carries no model_name. A series with an "engine"
// label applies to the instances with the same "engine" label (V1 data
// parallelism exports one per engine); one without applies to every vLLM
// instance of the exposition. It is ignored when no other vLLM metric
// names an instance, and Blocks stay unknown while num_gpu_blocks is "None"
// (before the engine has profiled memory).
//
// SGLang allocates KV memory per token, in pages of page_size tokens
// (1 unless --page-size is set):
//
//	Usage          sglang:token_usage, else sglang:num_used_tokens /
//	               sglang:max_total_num_tokens
//	BlockSize      sglang:page_size, else 1
//	Blocks         sglang:num_pages when sglang:page_size is known, else
//	               sglang:max_total_num_tokens / BlockSize (rounded down)
//	Preemptions    sglang:num_retracted_requests_total (SGLang "retracts"
//	               requests where vLLM preempts them)
//	PrefixHitRate  sglang:cache_hit_rate (a 0..1 gauge; SGLang exports no
//	               query and hit counters, so HasPrefix stays false)
//
// Left out: latency and token histograms, request counts, CPU/offload cache
// usage (vllm:cpu_cache_usage_perc), vLLM V0's gpu_prefix_cache_hit_rate
// gauge, SGLang's per-pool usages (swa_token_usage, mamba_usage) and
// everything else; unknown metrics are ignored.
//
// # Instances
//
// An Instance is identified by its engine, its model_name label and all its
// other labels (vLLM's "engine" index; SGLang's tp_rank, pp_rank, dp_rank,
// engine_type), which are kept in Labels. Instances are returned sorted by
// engine, model and labels.
//
// # Errors
//
// Syntax errors carry the source name (URL or file) and the line expfmt
// reports. A metric this package maps that is a histogram or summary, a
// non-finite or out-of-range value (a fraction outside 0..1, a negative
// counter, a token count that is not a whole number), a label name or value
// that is not valid UTF-8 or holds a control character, a value over
// MaxLabelBytes, labels besides model_name over MaxLabelBytes together, and
// two series with the same name and labels but different values are errors
// naming the series. An exposition with none of the metrics above fails with
// ErrNoMetrics. Messages quote input values cut to 64 bytes and escaped.
//
// Fetch never follows a redirect (an error naming the status and Location)
// and quotes at most 64 bytes of the body of another status than 200.
package scrape
