// Package exporter bridges gpufrag's domain state to Prometheus (STYLE.md
// items 14 and 15). Domain packages (alloc, frag, kv/blockpool, ...) never
// import Prometheus: they expose plain snapshots (alloc.Stats, mem.Layout,
// blockpool.Stats) and this package turns those snapshots into metrics at
// scrape time.
//
// # Sources
//
// A Source returns one Sample per label set (gpu, instance, model, pool) each
// time it is collected. Two sources ship here for in-process use, so that a Go
// engine embedding gpufrag's allocators or block pool exports the same metrics
// as the gpufrag exporter daemon:
//
//   - AllocatorSource bridges any alloc.Allocator: frag.Compute over its
//     Layout (which carries MaxAllocatable) plus the OOM counter of its Stats.
//   - BlockPoolSource bridges a *blockpool.Pool: vLLM's usage gauge and the
//     free, cached and evictable block counts.
//
// Allocators and pools are not safe for concurrent use, and Prometheus
// collects from the HTTP handler's goroutine, so both sources take the
// sync.Locker that the engine already holds around its allocator or pool
// (nil when the caller serialises scrapes with its own work in another way).
// FuncSource adapts any function, for snapshot files, remote endpoints and
// tests.
//
// The daemon's sources (`gpufrag exporter`, package exporter/daemon):
//
//   - SnapshotDir watches a directory of PyTorch memory snapshot pickles. It
//     is rescanned in the background (at start and every --rescan, on an
//     injected Clock); new and changed files (size and modification time)
//     are read with package snapshot and diagnosed with analysis.Analyze
//     (NoReplay, as `gpufrag analyze --no-replay`); a scrape only copies the
//     last rescan's samples. See SnapshotDir for labels and errors.
//   - NewGPUSource, NewEngineSource and NewClusterSource adapt the readers of
//     exporter/nvml, exporter/scrape and the Kubernetes reader: each takes a
//     func(context.Context) returning plain structs (GPUDevice, EngineKV,
//     ClusterState). NewScrapeSource takes exporter/scrape's Instances of
//     one server and decides their series (--scrape): pool "engine", or
//     "engine/k=v/..." with the server's extra labels. These readers are slow (NVML calls, HTTP, the API
//     server), so the daemon wraps them in NewPolledSource: polled in the
//     background every interval, with a timeout per poll, and served from
//     memory. A ContextSource collected directly gets a context with
//     Options.SourceTimeout (--source-timeout, default 2s) on each scrape,
//     runs in its own goroutine, and is reported down when it does not
//     answer in time; while a hung call is outstanding it is not called
//     again.
//
// Caching: a slow read never runs on a scrape. SnapshotDir and
// PolledSource keep the last rescan's or poll's samples and are
// VersionedSources: the Collector builds their const metrics once per
// version (rescan or poll) and re-sends them on later scrapes, the one
// caching decision of the scrape path. Served through Collector.Gatherer,
// as the daemon does, it goes further: a poll or a rescan assembles the
// Collector's whole families (written, checked, sorted) on its own
// goroutine, and a scrape that finds every source's version unchanged
// serves them as they are, beside the registry's families, and in the
// exposition formats scraped before, encoded there too: /metrics
// (preparedHandler, encoded.go) writes those bytes and encodes only the
// registry's families (Go runtime and process figures, the snapshot
// directory's counters), byte for byte what promhttp over a registry
// holding the Collector serves, its negotiation promhttp's own. In-process
// sources (AllocatorSource, BlockPoolSource) are computed on each scrape,
// and their families encoded then. A cache of the encoded exposition
// filled at scrape time and a throttle of the runtime collectors were
// measured not to pay at Prometheus' scrape intervals and were removed: a
// rescan (every 10 s) falls between any two scrapes 15 s apart, so with
// one Prometheus they never hit, and the scrape after a change, which sets
// the p99, paid the full cost in any case (BenchmarkScrapeInterval;
// docs/benchmarks.md, "Benchmarks: package exporter"). Encoding when the
// source changes is what makes that scrape cheap ("Issue 27, third
// round"). Such a scrape asks each source for its version alone (no
// samples copied, no label set checked again: Collector.unchanged), and
// the daemon's process figures come from NewProcessCollector,
// client_golang's families read on a cheaper path ("Issue 27, fourth
// round"). The daemon serves the Go and process collectors' families
// through Collector.GathererWithRuntime: read at every scrape into
// buffers kept between scrapes and written into their text exposition
// encoded once, without a registry's gathering or client_golang's Go
// collector's garbage, and it runs with GOGC=200 unless the user set GOGC
// (DaemonGC): fewer collections between two scrapes ("Issue 27, fifth
// round").
//
// # Daemon
//
// Serve runs the HTTP server on a listener the caller opens (tests use
// 127.0.0.1:0): /metrics (promhttp over the Gatherer given, never the
// global registry; for a Collector.Gatherer, from the prepared bytes), /healthz (200 "ok" while serving; 503 "shutting down";
// 503 "degraded: REASON" while a runner that is a StuckReporter has made no
// progress for its deadline) and, with a Capturer, /snapshots/. The server sets ReadHeader, Read,
// Write and Idle timeouts and MaxHeaderBytes, caps concurrent scrapes, runs
// the Runners (rescans, polls) in the background, and on cancellation shuts
// down gracefully within ServerConfig.ShutdownTimeout. Logs go through
// log/slog: one line per change of a source's state (down, up again), one per
// skipped file version, one per capture; none per scrape.
//
// Memory is bounded by caps, each a flag of the daemon: --max-files (256
// snapshot files watched, in name order), --max-file-bytes (256 MiB per file;
// a file's segments and blocks take up to about 25 bytes per file byte while
// it is analysed; its trace streams, so a history-dominated file takes far
// less: 63 MB for a generated 1 GB one, docs/benchmarks.md),
// --max-instances (256 distinct instance label values from snapshots) and
// --max-series (20000 gpufrag series per scrape, counted exactly before any
// metric is built; a source past it is down).
//
// # What is trusted
//
// Nothing in the snapshot directory: every file is opened through the
// directory's descriptor (openat), only when fstatat says it is a regular
// file, with O_NOFOLLOW|O_NONBLOCK, and refused when fstat on the open
// descriptor disagrees (ErrNotRegular, ErrFileChanged): a link, pipe,
// socket, device or directory named like a snapshot or sidecar is counted
// once (reason not_regular) and never opened. Checks run at every open. The
// reader and analysis of each file run under recover(): a panic is counted
// once for that file version (reason panic). One file is analysed at a
// time. A rescan or poll that makes no progress for its deadline
// (SnapshotDirConfig.StuckAfter, --stuck-after; a poll's timeout plus one
// interval) reports its source down and /healthz degraded until it moves
// on. /snapshots/ serves only the captures the Capturer wrote or indexed,
// still the same file (device, inode, size), at most that many bytes.
// DistinctDirs keeps the capture directory out of the snapshot directory.
//
// # Snapshot labels
//
// A snapshot file NAME.pickle (or .pkl) gets its labels from
//
//  1. the sidecar NAME.labels.json, {"instance": "...", "model": "...",
//     "gpu": "..."} (all optional strings; another key is an error);
//  2. else the name pattern <instance>__<model>[__<anything>].pickle, for
//     example vllm-0__llama-3-8b__dump.pickle;
//  3. else instance = NAME.
//
// A sidecar is refused whole (reason labels, logged once with the byte
// offset or the field), and its snapshot skipped, when encoding/json would
// read it loosely (untrusted.CheckJSON: invalid UTF-8 or an escaped lone
// surrogate, read as U+FFFD; a key twice, or in another case, such as
// "INSTANCE") or a value is not a label value (CheckLabelValue: a control
// character such as NUL, ESC or a newline, or over MaxLabelBytes). In a
// file name, invalid UTF-8 and control characters become '_'. Every other
// label value a source exports (engine labels, a GPU's uuid and name, the
// cluster name) passes CheckLabelValue too: the collector refuses a
// source's samples otherwise.
//
// gpu is the sidecar's when the file holds one device with memory, else the
// device index in the file; pool is "pytorch". Two files that yield the same
// label set export only the first in name order.
//
// # OOM capture
//
// With a Capturer (--capture-dir), every new or changed snapshot version
// whose trace holds an oom entry not seen in the file's previous version is
// copied, atomically, to
//
//	<capture-dir>/<instance>-<model>-<YYYYMMDDTHHMMSSZ>-<seq>.pickle
//
// (UTC time from the injected clock; bytes of instance and model outside
// [A-Za-z0-9._-] become '_'). Retention keeps --capture-max-files (20) and
// --capture-max-bytes (2 GiB), deleting the oldest first and never the
// newest. The files are served read-only:
//
//	/snapshots/             HTML listing, newest first
//	/snapshots/index.json   [{"name", "size_bytes", "time"}], newest first
//	/snapshots/<name>       download (only names in the capture index, and
//	                        only while the file is the one written)
//
// so a Grafana data link can point at http://HOST:9400/snapshots/ or at a
// file name. Captures are deduplicated per file version within one process
// only: after a restart, files still in the snapshot directory are captured
// again (retention bounds the copies). A file named like a capture is
// never captured again.
//
// # Collector
//
// Collector implements prometheus.Collector over a fixed set of sources with
// package-level Descs and MustNewConstMetric: nothing is stored between
// scrapes, so each scrape reflects the sources' state at that moment. New
// takes the Registerer to use (never the global default registry implicitly).
//
// Each source reports gpufrag_source_up{source="..."}: 1 when its Collect
// succeeded, 0 when it returned an error, panicked, or produced invalid or
// duplicate label sets. A failing source contributes no other series for that
// scrape and never fails the scrape as a whole, so the other sources keep
// being exported.
//
// # Metrics
//
// Memory (per gpu, instance, model, pool; definitions in package frag):
//
//	gpufrag_fragmentation_ratio           frag_rate = 1 − health
//	gpufrag_health_ratio                  largest_free_block ÷ cached_free
//	gpufrag_internal_fragmentation_ratio  (allocated − requested) ÷ allocated
//	gpufrag_largest_free_block_bytes
//	gpufrag_max_allocatable_bytes
//	gpufrag_reserved_bytes
//	gpufrag_allocated_bytes
//	gpufrag_requested_bytes
//	gpufrag_cached_free_bytes
//	gpufrag_device_free_bytes
//	gpufrag_allocation_size_entropy       Shannon entropy in bits (see below)
//	gpufrag_allocation_distinct_sizes
//	gpufrag_ooms_total                    counter
//	gpufrag_last_oom_timestamp_seconds    snapshot files: when the OOM counted last happened
//
// KV-cache block pools (per gpu, instance, model, pool):
//
//	gpufrag_kv_cache_usage_ratio   1 − free ÷ (blocks − 1), vllm:kv_cache_usage_perc
//	gpufrag_kv_blocks              pool size including the null block (vLLM num_gpu_blocks)
//	gpufrag_kv_free_blocks         free queue: free plus evictable cached blocks
//	gpufrag_kv_cached_blocks       blocks in the prefix cache, held or evictable
//	gpufrag_kv_evictable_blocks    cached blocks with no holder
//	gpufrag_kv_block_size_tokens   token slots per block
//
// Inference engines (vLLM, SGLang) through NewEngineSource, per gpu,
// instance, model and pool="engine"; figures an engine does not publish are
// not exported:
//
//	gpufrag_kv_cache_usage_ratio, gpufrag_kv_blocks, gpufrag_kv_block_size_tokens
//	gpufrag_kv_preemptions_total            counter
//	gpufrag_kv_prefix_cache_queries_total   counter, tokens
//	gpufrag_kv_prefix_cache_hits_total      counter, tokens
//
// GPU device memory through NewGPUSource (NVML), per gpu index:
//
//	gpufrag_gpu_memory_total_bytes{gpu}
//	gpufrag_gpu_memory_used_bytes{gpu}
//	gpufrag_gpu_memory_free_bytes{gpu}
//	gpufrag_gpu_info{gpu,uuid,name}                 always 1
//	gpufrag_gpu_process_memory_used_bytes{gpu,pid}
//
// Cluster occupancy through NewClusterSource, per cluster:
//
//	gpufrag_cluster_nodes, gpufrag_cluster_gpus
//	gpufrag_cluster_allocated_gpus         milli-GPUs / 1000
//	gpufrag_cluster_whole_free_nodes       GPU nodes with every GPU free
//	gpufrag_cluster_stranded_gpu_nodes     nodes with idle GPUs no pending pod can use
//	gpufrag_cluster_pending_pods
//
// Snapshot directory (SnapshotDir) and capture (Capturer):
//
//	gpufrag_snapshot_errors_total{reason}   files skipped, each version once; reasons:
//	                                        io not_regular too_large forbidden truncated
//	                                        length limit decode field analysis panic
//	                                        labels max_files max_instances duplicate_labels
//	                                        stale (each time a file becomes stale)
//	gpufrag_snapshots_analyzed_total
//	gpufrag_snapshot_last_analyzed_timestamp_seconds
//	gpufrag_snapshot_files                  files watched, stale ones not; 0 while the
//	                                        directory cannot be listed (source_up 0)
//	gpufrag_snapshot_stale_files            stale files present (not exported; removable)
//	gpufrag_oom_snapshots_captured_total{instance,model}   the 256 label sets captured last
//	gpufrag_oom_snapshot_capture_errors_total
//
// A snapshot file is stale when its writer is gone: gpufrag-probe's lock
// beside it (.STEM.lock) is free, or, with SnapshotDirConfig.MaxFileAge
// (`--max-file-age`), a file without a lock file was not modified within
// it. Its series go (so alerts on them resolve) and it is not watched; see
// SnapshotDir.
//
// For snapshots, gpufrag_ooms_total counts the oom entries of the device's
// trace, each once across the file's versions (told apart by time_us), so
// it does not fall when an entry leaves the allocator's history ring (a
// fall would be a counter reset to Prometheus, and increase() would count
// the entries still there again); it starts from the file's entries when
// the exporter starts or the file reappears. gpufrag_last_oom_timestamp_seconds
// is the time_us of the entry counted last (0 before any), the same after
// such a restart: GPUOOMsIncreasing ignores an increase that did not move it.
// The byte series are analysis.Device.Sizes, the figures `gpufrag analyze`
// prints for the same file (allocated_bytes as PyTorch counts it: blocks
// awaiting other streams are neither allocated nor cached free). A snapshot
// does not record the device's capacity, so gpufrag_device_free_bytes and
// gpufrag_max_allocatable_bytes, which count memory outside the
// allocator's segments, are exported only with SnapshotDirConfig.Capacity
// (`--capacity`) at least the device's reserved bytes: unknown is absent,
// not 0.
//
// Per source:
//
//	gpufrag_source_up{source}
//
// The entropy gauge is named without a unit suffix: "bits" is rejected by
// Prometheus' metric lint (it asks for base unit bytes), and an entropy is
// not a quantity of memory. Its HELP text states the unit.
//
// Labels have bounded cardinality: gpu, instance, model and pool (source only
// on gpufrag_source_up; cluster, uuid, name and pid only on their families). Empty label values are allowed and exported as
// empty strings, which Prometheus treats as absent.
package exporter
