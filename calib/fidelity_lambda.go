// Fidelity: the per-request lengths of the Lambda result files whose
// figures are simulated. The files (LambdaLabsML/vllm-benchmark) have no
// licence, so they are cited, not copied: only the two length arrays each
// run replays are recorded here, read from the file at the commit given.
// See fidelity_cases.go.

package calib

import "github.com/gpufrag/gpufrag/sim"

// fidLambdaRun is one cited result file's setup as the simulation needs it.
type fidLambdaRun struct {
	commit      string // the repository commit the lengths were read at
	in, out     []int  // input_lens and output_lens, in the file's order
	maxModelLen int    // from the file name (len2048, mml2048)
	version     string // the vLLM release (sim.ParseEngineVersion)
	engine      string // how the run's engine is simulated, for the page
}

// The 10 prompts every prompt_10 run sends are the seeded ShareGPT sample's
// first ten (Llama-3 tokenizer: 1,369 tokens); the outputs are what each
// model generated (an output of 0 tokens, with a TTFT of 0, is a request
// that returned nothing: it is replayed as a prefill-only request, as
// workload.ReadBench keeps such requests).
var fidLambdaIn = []int{13, 25, 27, 10, 329, 29, 399, 328, 4, 205}

// fidLambdaV060 says how the 2024-09 runs (vLLM 0.6.0, inferred) are
// simulated.
const fidLambdaV060 = "vllm-v0 without chunked prefill (vLLM 0.6.0, inferred from the run dates; V0 does not chunk below 32K context)"

// fidLambdaRuns maps a figure's file (its ref up to the first comma) to
// the run's lengths.
var fidLambdaRuns = map[string]fidLambdaRun{
	"results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json": {
		commit: "a4f9f4371a1ccac781293837fce2bce0cc6d25cc", in: fidLambdaIn,
		out: []int{120, 429, 233, 194, 101, 741, 9, 3, 6, 31}, maxModelLen: 2048, version: "0.6.0", engine: fidLambdaV060},
	"results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json": {
		commit: "f093afe94aacfb282ac40fef31c94a0010b37e5e", in: fidLambdaIn,
		out: []int{120, 507, 233, 194, 101, 741, 9, 3, 6, 31}, maxModelLen: 2048, version: "0.6.0", engine: fidLambdaV060},
	"results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2000.json": {
		commit: "a9b42a5f83bc39976bcb6bd44a96b2b15d820e10", in: fidLambdaIn,
		out: []int{120, 507, 233, 194, 101, 741, 9, 3, 6, 31}, maxModelLen: 2000, version: "0.6.0", engine: fidLambdaV060},
	"results/prompt_10/8xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp8_len2048.json": {
		commit: "a4f9f4371a1ccac781293837fce2bce0cc6d25cc", in: fidLambdaIn,
		out: []int{120, 624, 233, 194, 101, 741, 0, 0, 6, 35}, maxModelLen: 2048, version: "0.6.0", engine: fidLambdaV060},
	"results/prompt_10/2xA100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp2_len2048.json": {
		commit: "f093afe94aacfb282ac40fef31c94a0010b37e5e", in: fidLambdaIn,
		out: []int{120, 723, 233, 194, 101, 741, 0, 0, 6, 31}, maxModelLen: 2048, version: "0.6.0", engine: fidLambdaV060},
	"results_v0.5.4/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_mml2048_mns256_nss0_np10.json": {
		commit: "680cc0a3f925fbf1700b8ba928c7ceebe0015986", in: fidLambdaIn,
		out: []int{120, 428, 233, 194, 101, 741, 9, 3, 6, 31}, maxModelLen: 2048, version: "0.5.4",
		engine: "vllm-v0 without chunked prefill (vLLM 0.5.4, one token per stream chunk)"},
}

// fidLambdaEngine is the engine every Lambda run is simulated on.
var fidLambdaEngine = fidEngineRule{engine: sim.EngineVLLMV0}
