// Package sim is gpufrag's serving engine: a deterministic discrete-event
// model of one LLM inference instance (one GPU of a tensor-parallel group)
// that serves a list of requests with continuous batching, keeps their KV
// caches with a KV strategy (package kv/strategy) on top of a memory
// allocator (package alloc), and reports what memory, fragmentation,
// throughput and latency that setup gives.
//
// # The step loop
//
// engine.go holds the loop; each concern has its file: schedule.go (steps 1
// to 3), activations.go (4), account.go (5 and the summary), sample.go (6),
// fastpath.go (the fast paths below) and defrag.go (compaction).
//
// Virtual time is int64 nanoseconds; nothing reads a clock and nothing is
// random (the workload's randomness happens before, in package workload and
// sim/scenario). One loop iteration:
//
//  1. Arrivals: requests whose arrival time has come join the waiting queue.
//     A prompt longer than the context is rejected; an output longer than
//     max tokens (default: context − prompt) is truncated and counted. With
//     Config.MaxConcurrency (a benchmark client's --max-concurrency, a
//     closed loop) at most that many requests are in flight, sent and not
//     yet completed, failed or rejected: a request whose time comes while
//     they are waits at the client and is sent, in arrival order, when a
//     slot frees (at a completion, at the end of its step; at a failure or
//     rejection, when the step was scheduled).
//  2. Schedule (vLLM v1's order): running requests first, in the running
//     list's order (admission order, but for vLLM 0.5.4-0.5.5 under chunked
//     prefill, which requeue it after each step: PrefillFirstRequeue),
//     each taking its next prefill chunk or one decode token per sample from
//     the step's token budget (MaxBatchTokens) while at most MaxSeqs run.
//     A decode token grows the KV cache (Strategy.Grow). Then waiting
//     requests in FCFS order are admitted (Strategy.Admit, the whole prompt's
//     KV at once) while budget, sequence limit and memory allow; none are
//     admitted in a step that had to preempt, but under vLLM V0's chunked
//     prefill, which admits first and then puts the step's victims back at
//     the front of the waiting queue.
//  3. Out of KV memory, by Config.OnOOM:
//     preempt  free the newest running request (recompute later: it returns
//     to the front of the queue and re-prefills prompt + generated
//     tokens); a waiting request that does not fit waits.
//     reserve  admit only while the prompt + max tokens of every running
//     request fit the KV budget (the contiguous-max family: while its
//     own reservation fits), so nothing is ever preempted; an
//     allocation that still fails (fragmentation) fails the request.
//     fail     the request whose allocation failed ends with an OOM error.
//     A request that does not fit even alone, in emptied memory, is rejected:
//     it is never retried forever.
//  4. Activations: the step's transient buffers (residual stream, q/k/v,
//     attention output, gate/up, MLP activation, logits), sized by the
//     step's tokens and sampled positions, are allocated from the same
//     allocator in one layer's order and freed at the end of the step. They
//     are the batch-dependent sizes that fragment PyTorch's caching
//     allocator. When they do not fit, the request with the most tokens in
//     the step fails with an OOM (the engine process would have raised
//     torch.OutOfMemoryError) and the step is retried without it.
//  5. Step time, then tokens advance: a finished prefill samples the first
//     token (TTFT), each decode one more per sample, and a request that
//     reached its output length is released. The step time is a Profile's
//     (profile.go, steptime.go) when Config.Profile is set, else the
//     roofline's (Roofline, cost.go: the larger of FLOPs over achievable
//     FLOP/s and bytes over achievable bandwidth, plus a fixed overhead). A
//     Profile times the step as a sum of terms, each with its own
//     efficiency: the linear layers, their compute (a GEMM's efficiency
//     saturating in the step's token count) and weight reads blended as
//     (c^p + w^p)^(1/p); prefill attention by causal (query, key) pairs;
//     KV-cache reads and writes, each decoding sequence costing the decode
//     kernel's fixed time per KV head and layer more; the tensor-parallel
//     all-reduces over the GPU's links; KV copies;
//     a per-step, per-sequence and (outside a full CUDA graph) per-layer
//     overhead; and the output work per sampled token, beside the step or on
//     its path as the engine's release has it. Pure-decode batches are
//     padded to the engine's CUDA-graph capture sizes. The joint model
//     (joint.go, sim/profiles/joint.yaml) derives the profile of any GPU
//     preset, engine and release (Config.EngineVersion, engine_version.go):
//     the preset's sustained peaks (SustainedPeaks), efficiencies shared by every GPU, the
//     overheads of the release's class; it is the default step model
//     (DefaultStepTime, DefaultStepProfile) because it beats the roofline on
//     sources it was not fitted to (docs/fidelity.md). Config.Engine
//     composes the steps as vLLM V1 (mixed prefill and decode), vLLM V0
//     without chunked prefill or SGLang (prefill-only steps first) do, and
//     Config.WeightDType changes the weights' bytes (and FP8's math). A run
//     whose steps do not depend on their times can be recorded (Record) and
//     retimed under another profile without the engine (retime.go).
//  6. Samples: every SampleInterval of virtual time the allocator's stats,
//     its layout's health (package frag) and the strategy's KV breakdown are
//     recorded; Result summarises them.
//
// # Fast paths (results unchanged)
//
// Four shortcuts skip work whose outcome is already known; the results,
// series, events and the allocator's and strategy's counters are exactly
// those of the plain step-by-step loop (fastpath_test.go runs both). Three
// use optional interfaces, never an allocator package (internal/lint holds
// sim to alloc and alloc/registry), so any allocator that implements them gets
// them: caching and async record trips and have a stamp, vmm records trips
// that repeat across grows (alloc.TripRoom), caching and vmm summarise
// their free blocks.
//
//   - Activation round trips: on an alloc.TripRecorder, a step whose buffers
//     (keyed by the step's tokens and sampled positions) were allocated and
//     freed from the same allocator state before (on vmm, one that differs
//     only by grows of KV ranges) is not replayed: RepeatTrip counts its
//     calls instead.
//   - Fragmentation samples: when an alloc.Stamper's stamp has not moved
//     since the last sample (the Layout is the same), the last sample's
//     metrics are reused.
//   - Decode runs: when nobody can be admitted (nobody waits, or the head
//     of the queue is stopped before the strategy is asked: no slot or
//     token budget, the reserve policy's budget) and every running request
//     decodes one sample, the steps up to the next arrival (one the client
//     can send: under a full cap, arrivals wait at the client and change
//     nothing), sample time, completion, KV budget (vmm) or the strategy's
//     own limit run at once (decodeRun): every strategy does the grows in
//     bulk (strategy.DecodeStepper: a paged pool takes the blocks in the
//     order the one-token grows would, contiguous-grow stops before a
//     reallocation, vmm before the device runs out of pages, keeping the
//     memory a step's activation trip needs and within the trips the fresh
//     address space holds, alloc.TripRoom), and the step
//     times are stepTime's, on the roofline computed with a few integer
//     operations a step wherever they provably equal its float64 result
//     (exactRoofline), so a run of k steps costs k additions, not k step
//     times.
//   - Sample spans: the engine jumps over idle time to the next arrival,
//     and every sample due up to a step's end or an arrival records the
//     same state, so they are taken in one go (sampleSpan): the samples a
//     thinning (MaxSamples) would drop are never appended, and an idle
//     stretch of any length costs one call and the samples the series
//     keeps (at most MaxSamples); the KV breakdown adds the stretch's bytes
//     with one multiplication per field while its sum stays exact, else
//     with one addition per sample as before. A run's cost follows its
//     steps and arrivals, not its simulated time.
//
// # Memory setup
//
// The device is the GPU's capacity with the weights (Model.WeightBytes)
// and the CUDA context (ContextBytes) taken first. The KV budget is
// GPUMemoryUtilization × capacity − weights − context − the activation
// peak at MaxBatchTokens, which is how vLLM sizes its pool after its
// profiling run. The paged pool is one allocation of that budget; vmm KV is
// capped at it (vAttention sizes its page pool the same way); contiguous
// strategies allocate from the allocator until it runs out, as the
// frameworks they stand for do.
//
// # Accounting
//
// Every request ends in exactly one of completed, failed with OOM, rejected
// or unfinished (still queued or running when Duration cut the run).
// Output tokens are counted per sample as they are generated, so a request
// that fails or is preempted keeps the tokens it produced; recomputation
// after a preemption costs prefill time but produces no tokens twice.
// TTFT is from the request's send time (its arrival, or later when the
// client's cap held it, as vLLM's benchmark client starts its timer after
// taking its semaphore) to the first token of the first admission; E2E is
// from the send time to completion; TPOT is (finish − first token) ÷
// (output − 1) over completed requests with at least two tokens. A request
// of zero output tokens (a trace's failed or empty response) is a prefill
// that completes at its end: it counts in E2E and has no TTFT.
//
// # Modelling limits
//
// Prefix caching reuses cached prompt blocks only when the workload carries
// prefix ids (trace prefix columns or chat sessions, Config.PrefixCaching on
// a paged strategy); other strategies start cold for every request. A run
// starts with an empty cache unless Config.WarmPrompts puts the requests'
// own prompts in it first (a benchmark repeated against one server; a
// request without prefix ids matches only itself). Swap
// preemption, pipeline parallelism and speculative decoding are not
// modelled; the whole prompt's KV is allocated at admission even with
// chunked prefill (vLLM allocates per chunk). Step time is a model, not a
// measurement: the roofline has one set of factors for every GPU, engine
// and batch and no tensor-parallel communication time; a Profile's GPU
// terms add up without overlap (vLLM V1's asynchronous scheduling, which
// hides the scheduler's CPU work behind the GPU's, is not modelled; only
// the output work may run beside the step), vLLM 0.6's multi-step
// scheduling (Config.SchedulerSteps) only spreads the host's time of a
// decode step over the steps of a batch, and the joint model is as
// good as the published figures it was fitted to: docs/fidelity.md gives
// its errors on sources it never saw, per GPU and per source.
// The closed-loop client (Config.MaxConcurrency) frees a slot at the moment
// a request ends in the model's time, without the client's network and
// tokenizer time.
package sim
