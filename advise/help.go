// The command's help: `gpufrag advise --help` prints these, and the
// package's own tests hold them to what the code does.

package advise

// Help is `gpufrag advise`'s long help: what the sweep does, how the
// search and the recommendation work, shards.
const Help = `Advise sweeps the settings a user controls (KV strategy and block size,
gpu_memory_utilization, max_num_batched_tokens, max_num_seqs, allocator and
PYTORCH_ALLOC_CONF, prefix caching, prompt bucket size) on your own
workload, and recommends the one that sustains the most load with no
out-of-memory failures within the latency SLO. By default only stock
settings of the engine in use are candidates: vLLM with paged KV (the
first --kv names the engine family: paged, contiguous or vmm).
--experimental adds the other engine families gpufrag models (contiguous
KV: plain PyTorch/HF serving, FasterTransformer-style reservation) and
research setups (vmm KV, the sizeclass allocator, defrag policies,
labelled experimental).

For each candidate it searches the sustainable rate: the highest request
rate (the trace's arrivals rescaled) at which the simulated engine has no
OOM failures, no activation OOMs and no unfinished requests, and holds the
SLO (--slo-ttft-p99, default 2 s; --slo-tpot-p99, default 0.1 s; and,
with --slo-itl-p99, the p99 of every gap between a request's streamed
tokens, which a step carrying another request's prefill stretches while
TPOT, a request's mean gap, hides it: none by default). The
search starts at the trace's own rate (a trace without arrival times, such
as Vidur's, gets Poisson arrivals at 1 req/s; a benchmark run without start
times, arrivals drawn as its client drew them at its request_rate), doubles or halves it up to
--bracket-steps times until the outcome flips, then bisects the bracket
geometrically --bisect-steps times (a rate that held at every rate tried
is only the search's upper limit, reported as "at least" it: a higher
--start-rate or more --bracket-steps search further): at most 1 + 5 + 4 = 10 simulations per
candidate, the same rates for the same outcomes, so results are
deterministic and do not depend on --parallel. A trace is a finite burst:
past its last arrival the engine only works off what is queued, so a short
trace can hold the SLO at a rate the engine cannot sustain. Where the
recommendation's output throughput is below 80% of what its rate offers
(the rate times the mean output tokens), a warning says so and asks for a
longer trace; the search still reports the rate (a stricter judgement would
cap every short trace's rates at its length).

Candidates (the first value of each list is the base): every valid KV ×
allocator pair at the base; each other value of every other dimension for
every KV strategy on the base allocator (defrag only for contiguous KV;
prefix caching off only where the trace shares prefixes). The default
space has 26 candidates (28 with shared prefixes); --full crosses
everything instead. A second stage, --refine FILE with the --json output of
the first, crosses the best --refine-top setups with every utilization and
bucket size.

The recommendation meets the SLO with the highest sustainable rate; rates
within the search's resolution (4.4% with 4 bisections) tie, and ties go to
the setting with fewer changes from the engine's defaults, then lower
fragmentation p99 and peak memory. When no candidate meets the SLO at any
rate tried, the recommendation is the best effort ("meets_slo": false): the
candidate of the engine in use nearest the objective that binds (never
another engine family's), with the value it reaches and the setting to
change. Where that advice names a direction (the smallest
max_num_batched_tokens or max_num_seqs tried came nearest, or the largest),
the search goes on past the space in it: the best effort with that limit
halved (or doubled), round after round, until something meets the SLO, the
limit stops helping, vLLM's bound is reached (max_num_batched_tokens >=
max_num_seqs >= 1) or --extend candidates were added (default 8; 0: none);
the advice says how far it went, or that a step further breaks another
objective (say a smaller token budget that meets ITL p99 but breaks TTFT
p99: relax one of the two). Where TPOT p99 still binds, it says
whether requests with few output tokens set it, with figures
("short_outputs"): their TPOT is the mean of few decode steps, so one step
that carries other requests' prefills decides it. The deploy command names
the model by its Hugging Face id (a benchmark run's own model id where it
agrees with --model, else a preset's repository or the config's
_name_or_path) and sets every flag the recommendation needs, --tp,
--max-context and an fp8 --kv-dtype among them.

The search runs coarse to fine: every candidate's bracket first, then the
bisection only for the candidates whose bracket reaches the top two (the
others cannot be recommended or runner-up, and are reported with their
rate known to a factor of 2; --exhaustive bisects them all). Each run
stops as soon as it is certain to fail (its first OOM, or more than 1% of
requests past an objective). Neither changes the recommendation.

Large sweeps split into shards (--shard i/n --out FILE, one per machine or
Kubernetes Indexed Job pod); 'gpufrag advise merge' checks that the shards
come from the same inputs and cover every candidate once, and prints what
an unsharded --exhaustive --extend 0 run would (going past the space needs
the trace).`

// Examples are `gpufrag advise`'s usage examples.
const Examples = `  # The default sweep (26 stock settings of vLLM with paged KV) on your trace, model and GPU:
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g

  # Only paged block sizes and two utilizations, as JSON:
  gpufrag advise --trace examples/azure_conv.csv --model examples/qwen2.5-7b.config.json \
      --gpu h100-80g --tp 2 --kv paged:16,paged:32 --alloc caching \
      --gpu-memory-utilization 0.9,0.95 --json

  # Then cross the best 3 setups with every utilization and bucket size:
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --json > stage1.json
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --refine stage1.json

  # Split across 2 machines (deploy/kubernetes/advise-job.yaml runs n of them), then merge:
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --shard 0/2 --out shard-0.json
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --shard 1/2 --out shard-1.json
  gpufrag advise merge shard-*.json`

// MergeHelp is `gpufrag advise merge`'s long help.
const MergeHelp = `Merge reads the partial results written by 'gpufrag advise --shard i/n --out FILE',
checks that they come from the same trace, flags and candidate list (their
input digest), that there is one file per shard and that together they
cover every candidate exactly once, and prints the advice an unsharded run
with --extend 0 prints, byte for byte.`
