// Package rules derives per-instance Prometheus alert rules from a recorded
// history of gpufrag_health_ratio, so that each inference-server instance is
// alerted against what is normal for it rather than against one fleet-wide
// constant.
//
// # Input
//
// A History is a set of series, one per label set, each a list of (time,
// health) points. Two readers build one:
//
//   - ReadPrometheusJSON reads the body of a Prometheus HTTP API range query
//     (/api/v1/query_range) over gpufrag_health_ratio or
//     gpufrag_fragmentation_ratio, as saved by curl. Fragmentation values are
//     turned into health (1 − fragmentation).
//   - ReadCSV reads "timestamp,instance,model,health" rows, timestamps in
//     Unix seconds or RFC 3339, with an optional header row.
//
// Both are strict: a malformed document is rejected with an error that names
// the file, the line and column (and byte offset for JSON) and the field,
// never skipped silently and never a panic. Both are bounded: MaxInputBytes
// of input, MaxLabelBytes per label value, ReadOptions.MaxSeries series
// (each costs about 1 KB whatever its points), and a value quoted in a
// message is cut to 64 bytes. Derive refuses more than
// Options.MaxInstances (instance, model) groups, and WriteRules streams one
// rule at a time, so memory does not grow with the rules written.
//
// # Derivation
//
// Points are grouped by (instance, model): the GPUs and pools of one instance
// share its threshold, as the generated matcher {instance, model} covers them
// all. For each group, over the recent window (Options.Window before the
// group's last point):
//
//	low       = quantile(1 − q, health)          the q-quantile of fragmentation, as health
//	threshold = clamp(low − margin, Min, Max)    floored to 0.001
//
// quantile is the linear interpolation between order statistics that
// Prometheus' quantile_over_time uses (rank (n−1)·φ), so
// quantile_over_time(0.05, gpufrag_health_ratio[7d]) reproduces low on the
// server. Because the map x ↦ 1 − x reverses order and the interpolation is
// affine, quantile(1 − q, health) = 1 − quantile(q, fragmentation) exactly:
// the threshold is the p95 fragmentation of the instance, read as health.
//
// Why these steps: an instance whose health sits above low 95% of the time
// only goes below it in its worst 5% of minutes; the margin keeps those
// ordinary dips (together with the rule's "for" duration) from paging. The
// clamps bound the result: Max (default 0.9) stops an instance whose cache is
// always empty (health 1) from alerting on any change, and Min (default 0.1)
// keeps an alert that can still fire for an instance that is always badly
// fragmented. Groups with fewer than Options.MinPoints points get the
// fleet-wide convention (health < 0.5) and are flagged as fallbacks.
//
// The package is pure: no clock, no I/O beyond the io.Reader it is given.
package rules
