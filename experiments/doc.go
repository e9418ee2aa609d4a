// Package experiments tests popular claims about GPU memory fragmentation
// in the open: one YAML file per claim (the *.yaml files beside this one,
// embedded in the binary), run by `gpufrag experiments run`, which also
// regenerates docs/findings.md and its PNG plots under docs/findings/.
//
// # The experiment file format
//
// Every field is strict: an unknown field, a wrong type or an invalid rule is
// an error naming the file, the line and the field ("experiments/x.yaml:
// line 7: field "decide[0]": op "near": want one of ...").
//
//	name: paged-vs-contiguous       # lower-case, dashes; the file is NN-<name>.yaml
//	claim: Paged KV caches cut ...  # the claim in one sentence, as commonly stated
//	source: where the claim comes from, if known
//
//	# The setup: exactly one of
//	scenario: {...}                 # an inline scenario, in sim/scenario's format
//	scenario_file: docs/scenarios/vllm-paper-fig2.yaml   # one from the repository
//	cluster:                        # the FGD paper's protocol (package cluster)
//	  nodes: ../shared/data/openb/openb_node_list_gpu_node.csv
//	  pods: ../shared/data/openb/openb_pod_list_default.csv
//	  seed: 42                      # first seed
//	  seeds: 10                     # how many
//	  ratio: 1.3                    # GPU demand over capacity (default 1.3)
//	arithmetic: true                # model presets: KV bytes per token × tokens
//
//	runs:                           # the configurations compared, each named
//	  # scenario runs: the scenario with these overrides, exactly one kv × alloc
//	  - {name: paged, kv: "paged:16", alloc: caching, on_oom: preempt,
//	     gpu_memory_utilization: 0.85, kv_dtype: int8, bucket: 256, beam: [1, 4],
//	     max_seqs: 32, max_context: 640000, duration: 2h,
//	     defrag: threshold, defrag_low: 0.6, defrag_high: 0.8, defrag_floor: 0.15,
//	     offline_gap: 168h, defrag_no_reactive: true}
//	  - {name: fgd, policy: fgd}                          # cluster runs
//	  - {name: fp16, model: llama-3-70b, kv_dtype: fp16, tp: 1, tokens: 1000000}  # arithmetic
//
//	show: [kv.token_states, "frag.mean[0%:10%]"]   # extra figures for the tables
//	decide:                         # the decision rules
//	  - {label: paged below 8%, metric: kv.frag, run: paged, op: lt, value: 0.08}
//	  - {metric: output_tokens_per_s, run: paged, ref: contiguous, combine: ratio,
//	     op: between, low: 2, high: 3}
//	  - {metric: "waste.mean[95%:100%]", run: caching, ref_metric: "waste.mean[4%:8%]",
//	     combine: diff, op: gt, value: 0.05}
//	cannot_simulate: what part of the claim needs real hardware, and why
//	reduced: {duration: 5m, count: 0, seeds: 2, nodes: ..., pods: ...}   # for tests, --reduced
//	plot: {series: frag, title: ...}   # the chart in docs/findings/<name>.png
//	notes: |
//	  Markdown copied verbatim into the findings section.
//
// # Metrics
//
// Scenario runs: the scalars of sim.Result (frag_rate.p50/p99/max, health_min,
// kv.token_states/reservation/internal/external, kv.frag = internal +
// external, completed, failed_oom, rejected, unfinished, preemptions,
// activation_ooms, oom_per_day, output_tokens_per_s, batch_size_mean,
// ttft.p50/p99, tpot.p50/p99, e2e.p99, peak_reserved_bytes,
// peak_allocated_bytes, kv_budget_bytes, kv_pool_bytes, simulated_s,
// defrag.runs/bytes_moved/freed_bytes/pause_total_s/pause_max_s/
// lower_bound_bytes, defrag.moved_over_bound = bytes moved ÷ the planner's
// lower bound (0 when nothing moved) and defrag.freed_per_run_share =
// freed bytes per compaction ÷ KV budget), and
// means of the per-second memory series over a window, SERIES.mean[FROM:TO],
// FROM and TO both percentages of the run's duration or both durations, the
// whole run without a window:
//
//	frag         1 − health: the share of the allocator's cached free memory outside its largest free block
//	waste        (reserved − allocated) ÷ reserved, what PyTorch's memory_reserved and memory_allocated show
//	waste_bytes  reserved − allocated
//	kv_held      bytes of KV memory the strategy holds
//	reserved     bytes the allocator holds
//	running      requests running
//
// Cluster runs: NAME@PCT at PCT% of arrived GPU demand, averaged over the
// seeds, NAME one of alloc_ratio, unallocated (1 − alloc_ratio),
// unallocated_gpus, frag_total, frag_rate, stranded_nodes, whole_free_nodes,
// partly_used_nodes; and failed (pods that fit nowhere). Arithmetic runs:
// kv_bytes_per_token, kv_total_bytes, kv_total_gb (10⁹ bytes).
//
// # Rules and verdicts
//
// A rule takes metric of run; with combine it is combined with a reference,
// ref_metric (default: the same metric) of ref (default: the same run):
// ratio is run ÷ ref, diff is run − ref, reduction is (ref − run) ÷ ref. The
// value is compared with op: lt, le, gt, ge (against value), between (low ≤
// x ≤ high) or approx (|x − value| ≤ tol × |value|). A missing or non-finite
// value fails. The verdict is computed from the rules, never written in the
// file: every rule passes → holds (holds in part when cannot_simulate names
// an untested part); none passes → does not hold; some → holds in part; no
// rules and cannot_simulate → cannot be tested by simulation. An experiment
// whose input data (cluster lists, traces) is absent is skipped, with the
// reason.
//
// # Running
//
// RunAll prepares every run (scenario.Build, reading cluster lists), runs the
// simulations and cluster seeds on a bounded pool of goroutines and
// evaluates the rules. Each engine run is deterministic and results are
// stored by index, so outcomes do not depend on the parallelism. Paths in the
// files are relative to Options.Root, the repository root.
//
// # Findings
//
// WriteFindings writes docs/findings.md (Markdown) and docs/findings/*.png.
// The page records Digest: the sha256 over the experiment files in sorted
// order and the scenario files they reference; a test fails when the files
// change and the page was not regenerated with
// `go run ./cmd/gpufrag experiments run --write-findings`.
package experiments
