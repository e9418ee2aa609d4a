package snaptest

// Crafted describes a snapshot that is small on disk and large in work
// (issue 28, item 3): many segments and blocks, and a trace that touches few
// of them, so that any work per trace event in proportion to all segments or
// blocks shows. Dict keys and repeated strings go through the pickle memo and
// ints take the fewest bytes, as PyTorch's writer does, which keeps a segment
// near 105 bytes: 45,000 segments and a 4,000-event trace make 4.7 MB.
//
// The history is one our model of the caching allocator (default settings)
// reproduces address for address, so that a replay takes its ordinary paths
// (best fit, splits, merges, new and released segments) rather than its
// mismatch paths:
//
//   - Segments large segments of 20 MiB before the trace, 32 MiB apart, each
//     a live block of Live bytes and a free tail, spread over Streams streams
//     and Devices devices (segment i on stream i mod Streams and device i mod
//     Devices; segment 0 is on stream 0 of device 0, where the trace is);
//   - TinyBlocks blocks of 512 bytes in small segments of 2 MiB (4,096
//     each) after them, alternately live and free, on stream 0;
//   - then Events trace events, in cycles: an alloc of a tail's size and its
//     free (best fit: the tail of segment 0); a segment_alloc of 64 MiB far
//     above, the alloc it served, its free and the segment_free (the segment
//     is released); with tiny blocks, a 512-byte alloc and its free (the
//     first free 512 bytes); and every OOMEvery-th cycle an oom entry asking
//     for 1 TiB with DeviceFree bytes free on the device.
type Crafted struct {
	Segments   int
	Live       int // default 12 MiB; a multiple of 512 from 512 to 19 MiB
	Streams    int // default 1
	Devices    int // default 1
	TinyBlocks int
	Events     int
	OOMEvery   int // 0: no oom entries
	DeviceFree int // default 1 GiB
}

// Crafted segment geometry.
const (
	craftedBase    = uint64(0x7f0000000000)
	craftedStride  = 32 << 20
	craftedSegment = 20 << 20
	craftedSmall   = 2 << 20
	craftedTiny    = 512
	craftedBig     = 64 << 20
)

// Doc builds the snapshot document; encode it with Encode.
func (c Crafted) Doc() Dict {
	memo := map[string]*Shared{}
	s := func(v string) *Shared { // a string written once, then referred to
		if memo[v] == nil {
			memo[v] = &Shared{V: v}
		}
		return memo[v]
	}
	dict := func(kvs ...any) Dict { // keys through the memo, ints in the fewest bytes
		d := make(Dict, 0, len(kvs)/2)
		for i := 0; i < len(kvs); i += 2 {
			v := kvs[i+1]
			switch x := v.(type) {
			case int:
				v = Int(x)
			case int64:
				v = Int(x)
			case uint64:
				v = Int(int64(x))
			}
			d = append(d, KV{s(kvs[i].(string)), v})
		}
		return d
	}
	streams, devices := max(c.Streams, 1), max(c.Devices, 1)
	live := c.Live
	if live <= 0 {
		live = 12 << 20
	}
	deviceFree := c.DeviceFree
	if deviceFree <= 0 {
		deviceFree = 1 << 30
	}
	noFrames := &Shared{V: []any{}}
	var segs []any
	at := craftedBase
	for i := 0; i < c.Segments; i++ {
		blocks := []any{
			dict("address", at, "size", live, "requested_size", live, "state", s("active_allocated")),
			dict("address", at+uint64(live), "size", craftedSegment-live, "requested_size", 0, "state", s("inactive")),
		}
		// No allocated_size, active_size or requested_size: they are
		// optional, and the 45,000-segment file stays under 5 MB.
		segs = append(segs, dict("device", i%devices, "address", at, "total_size", craftedSegment,
			"stream", i%streams, "segment_type", s("large"), "frames", noFrames, "blocks", blocks))
		at += craftedStride
	}
	tinyBase := at
	for left := c.TinyBlocks; left > 0; {
		n := min(left, craftedSmall/craftedTiny)
		left -= n
		var blocks []any
		var allocated int64
		b := at
		for j := 0; j < craftedSmall/craftedTiny; j++ {
			state := s("inactive")
			if j%2 == 0 && j < n {
				state = s("active_allocated")
				allocated += craftedTiny
			}
			req := 0
			if j%2 == 0 && j < n {
				req = craftedTiny
			}
			blocks = append(blocks, dict("address", b, "size", craftedTiny, "requested_size", req, "state", state))
			b += craftedTiny
		}
		segs = append(segs, dict("device", 0, "address", at, "total_size", craftedSmall,
			"allocated_size", allocated, "active_size", allocated, "requested_size", allocated,
			"stream", 0, "segment_type", s("small"), "frames", noFrames, "blocks", blocks))
		at += craftedStride
	}
	big := at + 1<<30
	var trace []any
	t := int64(1_700_000_000_000_000)
	event := func(action string, addr uint64, size int64) {
		if len(trace) < c.Events {
			trace = append(trace, dict("action", s(action), "addr", addr, "size", size, "stream", 0, "time_us", t))
			t += 10
		}
	}
	for cycle := 1; len(trace) < c.Events; cycle++ {
		if c.Segments > 0 {
			tail := craftedBase + uint64(live)
			event("alloc", tail, int64(craftedSegment-live))
			event("free_completed", tail, int64(craftedSegment-live))
		}
		event("segment_alloc", big, craftedBig)
		event("alloc", big, craftedBig)
		event("free_completed", big, craftedBig)
		event("segment_free", big, craftedBig)
		if c.TinyBlocks > 1 {
			event("alloc", tinyBase+craftedTiny, craftedTiny)
			event("free_completed", tinyBase+craftedTiny, craftedTiny)
		}
		if c.OOMEvery > 0 && cycle%c.OOMEvery == 0 && len(trace) < c.Events {
			trace = append(trace, dict("action", s("oom"), "size", 1<<40, "stream", 0,
				"device_free", deviceFree, "time_us", t, "frames", noFrames))
		}
	}
	traces := make([]any, devices)
	for d := range traces {
		traces[d] = []any{}
	}
	if trace != nil {
		traces[0] = trace
	}
	return dict("segments", segs, "device_traces", traces)
}
