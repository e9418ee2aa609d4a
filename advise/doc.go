// Package advise recommends memory settings for an LLM serving engine by
// the load they sustain on the user's own workload: `gpufrag advise`.
//
// # What it sweeps
//
// The settings a user controls (Settings): the KV strategy and block size
// (paged:16, contiguous-grow...), vLLM's gpu_memory_utilization,
// max_num_batched_tokens and max_num_seqs, the allocator and its
// PYTORCH_CUDA_ALLOC_CONF (alloc/registry syntax), prefix caching, the prompt
// bucket size and the defrag policy. The KV and allocator specs are held
// parsed (strategy.Spec, registry.Spec: the caller parses the text once, at
// the edge), and marshal to and from their text, so the JSON documents
// carry it; settings compare with Settings.Equal, not ==. Space lists the values of each; the
// first of each list is the base. DefaultSpace holds only stock settings
// of the engine in use, vLLM with paged KV; ExperimentalSpace adds the
// other engine families gpufrag models (contiguous KV: plain PyTorch/HF
// serving, FasterTransformer-style reservation) and the research setups
// (vmm KV, the sizeclass allocator, compaction policies), whose candidates
// are labelled (Candidate.Experimental, Settings.Research). The engine in
// use is the family of the base KV strategy (Space.InEngine); the default
// sweep stays in it. Space.Candidates does not
// cross the lists blindly: it takes every valid KV × allocator pair at the
// base (the interaction that matters most), then varies every other
// dimension one at a time for each KV strategy on the base allocator. The
// default space gives 26 candidates (28 where the trace shares prefixes)
// instead of the 1,536 of the cross product (Space.Full). A second
// stage, Refine, then crosses the best few setups of the first with every
// utilization and bucket size, so the best allocator is also tried at the
// utilization that suits it. The stages are separate runs (the second
// reads the first's report), so each can be sharded.
//
// # Sustainable load
//
// A candidate's sustainable rate is the highest request rate, the trace's
// arrivals rescaled as a scenario's trace section rescales them
// (scenario.TraceAt; an untimed trace gets Poisson arrivals at 1 rps from
// seed 1 first, as a scenario with seed 1 draws them), at which a simulation (package
// sim) has no OOM failures, no activation OOMs and no unfinished requests,
// and holds the SLO on p99 TTFT and TPOT (Outcome.Check). FindSustainable
// finds it with a fixed plan: try the start rate (the trace's own), double
// or halve it up to Search.BracketSteps times until the outcome flips, then
// bisect the bracket geometrically Search.BisectSteps times. The rates
// tried depend only on which rates held, so a deterministic evaluator gives
// a deterministic result; the Evaluator is a function so tests can search
// a fake with a known threshold. Advise's evaluator stops each run once
// it is certain to fail (sim.Config.EarlyStop: the first OOM, or more than
// 1% of the requests over an objective), which changes no decision
// (TestEarlyStopSameAdvice); a candidate that held at no rate has its
// lowest rate run whole again for the figures it is reported with.
//
// # Recommendation
//
// NewReport ranks the results: eligible candidates first (some rate held,
// no OOMs there, no more rejected requests than the candidate rejecting
// fewest, deployable). Rates within the search's resolution of the best
// (Report.TieTolerance) tie, and ties go to fewer changes from the
// engine's defaults (Settings.Changes), then stock before experimental,
// then the higher rate, fragmentation p99, peak reserved memory and
// candidate index. The first is recommended, the second is the runner-up,
// and every candidate carries one line of evidence in human units. When
// no candidate meets the SLO at any rate tried, the recommendation is the
// best effort (MeetsSLO false): the one of the engine in use nearest the
// objective that binds (the largest of its p99s over their objectives:
// TTFT, TPOT, and ITL with SLO.ITLP99; never another engine family's), with the value
// it reaches (Binding, BestValue, LowestRateRPS) and Report.Advice saying
// what to relax or change.
//
// # Past the space
//
// Where the advice names a direction (the smallest max_num_batched_tokens
// or max_num_seqs tried came nearest a latency objective, or the largest),
// the search follows it (Follow, Extend): it adds the best effort with
// that limit halved (or doubled), runs it, builds the report again, and
// goes on until something meets the SLO, the limit stops moving the
// objective, vLLM's bound is reached (max_num_batched_tokens >=
// max_num_seqs >= 1), or DefaultExtend candidates were added (`advise
// --extend N`). The candidates it adds are of group "extend", and the
// advice says how far it went, or, where a step further brings the
// binding objective nearer but breaks another by more (a smaller token
// budget that meets ITL p99 and breaks TTFT p99), that the two pull the
// limit apart (conflict). Then, where TPOT p99 still binds,
// ExplainShortOutputs runs the best effort once more with every request's
// figures and says whether requests with few output tokens set it
// (Report.ShortOutputs): their TPOT is the mean of few decode steps, so a
// step that carries other requests' prefills decides it.
//
// # Error bands
//
// AddBands (bands.go; the CLI calls it with calib's held-out residuals,
// and for ITL p99 calib's measured p99s)
// gives each candidate the error band of its sustainable rate, p99s and
// throughput for the step model it ran under and its mean batch, and lists
// the candidates whose ranked figure and the recommendation's are each
// within the other's band (Report.WithinBand, BandNote): the simulation
// cannot rank them. docs/calibrate.md ("Error bands") says how the bands
// are made.
//
// # Parallelism and shards
//
// Run searches candidates on a bounded pool of goroutines (one search per
// candidate, sequential inside); results land by index, so they do not
// depend on the number of workers. A sweep too large for one machine is
// split with ShardIndices (index % n == i); each shard writes a Partial
// with the Digest of its Inputs (trace SHA-256, model, GPU, SLO, search
// bounds, space and candidate list), and Merge checks the digests and the
// coverage before building the same Report an unsharded run builds with
// no search past the space (Follow needs the trace; --extend 0).
//
// # One run
//
// Advise (request.go) is a whole run, `gpufrag advise`'s: it takes a
// Request (the trace read once, the base engine configuration, the space,
// SLO and search, refinement, shard and budget, all parsed and checked by
// the caller), draws and checks the candidates, runs the search, hands a
// shard's Partial to a hook, goes on past the space (Follow) and explains
// short outputs; Hooks report progress. The CLI only builds the Request
// from flags and prints the Report; bad requests come back as
// BadRequestError (a usage error), refinements of other advice as
// RefineError. What the command needs beyond the run is here too
// (command.go): the space from the flags' text (SpaceText, parsed once),
// the engine every candidate starts from (Engine, Request.SetEngine), the
// limits it takes as given (CheckLimits), the deploy command's model id
// (ModelID), its progress lines and hooks, its files, the error bands of
// calib's residuals (AddCalibBands) and its help (help.go).
//
// This package is a driver, not part of the deterministic core: it starts
// goroutines (Run) but reads no clock and no global random source; package
// sim does the simulating.
package advise
