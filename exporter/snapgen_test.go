package exporter

import "github.com/gpufrag/gpufrag/internal/snaptest"

type pod = snaptest.Dict

// genSnapshot is a small modern snapshot of one segment on device with
// used MiB of 4 allocated (so files with different used differ in their
// figures) and ooms oom entries in the device's trace (at time_us 10, 11...).
func genSnapshot(device, used, ooms int) []byte {
	times := make([]int, ooms)
	for i := range times {
		times[i] = 10 + i
	}
	return genSnapshotOOMs(device, used, times...)
}

// genSnapshotOOMs is genSnapshot with an oom entry at each of oomTimes
// (time_us; a time of 0 leaves the entry without one, as PyTorch 2.0's).
func genSnapshotOOMs(device, used int, oomTimes ...int) []byte {
	const mib = 1 << 20
	addr := 1 << 40
	block := func(a, size int, state string) pod {
		return pod{{"address", a}, {"size", size}, {"requested_size", size}, {"state", state}, {"frames", []any{}}}
	}
	blocks := []any{block(addr, used*mib, "active_allocated"), block(addr+used*mib, (4-used)*mib, "inactive")}
	seg := pod{{"device", device}, {"address", addr}, {"total_size", 4 * mib}, {"allocated_size", used * mib},
		{"active_size", used * mib}, {"requested_size", used * mib}, {"stream", 0}, {"segment_type", "large"},
		{"is_expandable", false}, {"frames", []any{}}, {"blocks", blocks}}
	trace := []any{pod{{"action", "alloc"}, {"addr", addr}, {"size", used * mib}, {"stream", 0}, {"time_us", 5}}}
	for _, us := range oomTimes {
		e := pod{{"action", "oom"}, {"addr", 0}, {"size", 8 * mib}, {"stream", 0}, {"time_us", us}, {"frames", []any{}}}
		if us == 0 {
			e = e.Del("time_us")
		}
		trace = append(trace, e)
	}
	traces := []any{}
	for d := 0; d <= max(device, 0); d++ {
		if d == device {
			traces = append(traces, trace)
		} else {
			traces = append(traces, []any{})
		}
	}
	return snaptest.Encode(pod{{"segments", []any{seg}}, {"device_traces", traces}})
}
