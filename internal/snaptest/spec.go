package snaptest

import "math"

// FromSpec builds a small snapshot document from spec, read a byte at a
// time (a spec that runs out reads as zeros), for fuzz targets: the fuzzer
// mutates the few bytes that choose the structure, so every input is a
// pickle that decodes and has the shape of a snapshot, and a single flip
// reaches a negative device, overlapping segments, an address near 2^64,
// blocks that do not tile, a negative size, an unknown state or a trace
// entry that runs past 2^64, or names full of control characters. Encode
// the result with Encode. The layout:
//
//	flags: bit 0 device_traces, bit 1 legacy blocks (no address, a
//	       history), bit 2 allocator_settings, bit 3 external_annotations,
//	       bits 4-5 the number of segments minus 1, bit 6 every frame name
//	       and segment_type is Hostile (WithStrings)
//	per segment: device (int8); address (0x7f0000000000 + byte·2 MiB, 0xff:
//	       2^64 − 1 MiB); blocks (bits 0-1: count − 1; bit 2: stream 1;
//	       bit 3: expandable; bit 4: small pool); then per block: size
//	       (int8 · 128 KiB), state (bits 0-1: allocated, inactive, pending,
//	       unknown; bits 2-7: requested = size − 8·n), frames (site mod 3,
//	       0: none); then a total_size tweak and an allocated_size tweak
//	       (int8 · 512 each, added to the blocks' sums)
//	traces (bit 0): device lists (bits 0-1: count − 1), entries (bits 0-3),
//	       then per entry: action (mod 8), address (bits 0-1: segment,
//	       bits 2-7: offset · 128 KiB), size (int8 · 128 KiB; oom: device
//	       free in MiB)
//	annotations (bit 3): device (int8)
func FromSpec(spec []byte) Dict {
	r := specReader{b: spec}
	flags := r.next()
	sites := []any{nil,
		&Shared{V: []any{Dict{{"filename", "model.py"}, {"line", 10}, {"name", "forward"}}}},
		&Shared{V: []any{Dict{{"filename", "??"}, {"line", 0}, {"name", "c10::alloc"}},
			Dict{{"filename", "train.py"}, {"line", 3}, {"name", "step"}}}},
	}
	const granule = 2 << 20
	const unit = 128 << 10
	var segs []any
	var addrs []uint64
	for i := 0; i <= int(flags>>4&3); i++ {
		dev := int64(int8(r.next()))
		addr := uint64(0x7f0000000000) + uint64(r.next())*granule
		if addr == 0x7f0000000000+0xff*granule {
			addr = math.MaxUint64 - 1<<20
		}
		addrs = append(addrs, addr)
		shape := r.next()
		var blocks []any
		var total, allocated, active, requested int64
		at := addr
		for j := 0; j <= int(shape&3); j++ {
			size := int64(int8(r.next())) * unit
			st := r.next()
			req := size - 8*int64(st>>2)
			state := []string{"active_allocated", "inactive", "active_pending_free", "bogus"}[st&3]
			frames := sites[int(r.next())%len(sites)]
			b := Dict{{"size", size}, {"requested_size", req}, {"state", state}}
			if flags&2 == 0 {
				b = append(Dict{{"address", at}}, b...)
				if frames != nil {
					b = append(b, KV{"frames", frames})
				}
			} else {
				h := Dict{{"addr", at}, {"real_size", req}}
				if frames != nil {
					h = append(h, KV{"frames", frames})
				}
				b = append(b, KV{"history", []any{h}})
			}
			blocks = append(blocks, b)
			at += uint64(size)
			total += size
			if state == "active_allocated" {
				allocated += size
			}
			if state != "inactive" {
				active += size
				requested += req
			}
		}
		total += int64(int8(r.next())) * 512
		allocated += int64(int8(r.next())) * 512
		pool := "large"
		if shape&16 != 0 {
			pool = "small"
		}
		segs = append(segs, Dict{{"device", dev}, {"address", addr}, {"total_size", total},
			{"allocated_size", allocated}, {"active_size", active}, {"requested_size", requested},
			{"stream", int64(shape >> 2 & 1)}, {"segment_type", pool}, {"segment_pool_id", Tuple{0, 0}},
			{"is_expandable", shape&8 != 0}, {"blocks", blocks}})
	}
	doc := Dict{{"segments", segs}}
	if flags&1 != 0 {
		lists := make([]any, int(r.next()&3)+1)
		n := int(r.next() & 15)
		var entries []any
		actions := []string{"segment_alloc", "alloc", "free_requested", "free_completed", "segment_free",
			"oom", "snapshot", "segment_map"}
		for i := 0; i < n; i++ {
			action := actions[int(r.next())%len(actions)]
			where := r.next()
			addr := addrs[int(where&3)%len(addrs)] + uint64(where>>2)*unit
			size := int64(int8(r.next())) * unit
			e := Dict{{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0},
				{"time_us", 1_700_000_000_000_000 + int64(i)}}
			if action == "oom" {
				e = Dict{{"action", action}, {"size", size}, {"device_free", size / unit << 20},
					{"time_us", 1_700_000_000_000_000 + int64(i)}}
			}
			entries = append(entries, e)
		}
		for d := range lists {
			lists[d] = []any{}
		}
		lists[0] = entries
		doc = append(doc, KV{"device_traces", lists})
	}
	if flags&4 != 0 {
		doc = append(doc, KV{"allocator_settings", Dict{{"PYTORCH_CUDA_ALLOC_CONF", ""},
			{"max_split_size", -1}, {"garbage_collection_threshold", 0.0}, {"expandable_segments", false}}})
	}
	if flags&8 != 0 {
		doc = append(doc, KV{"external_annotations", []any{Dict{{"stage", "START"}, {"name", "step"},
			{"device", int64(int8(r.next()))}, {"time_us", 1_700_000_000_000_000}}}})
	}
	if flags&0x40 != 0 {
		doc = WithStrings(doc, Hostile, Hostile).(Dict)
	}
	return doc
}

// Seeds are specs of valid snapshots, for fuzz corpora: two segments with a
// trace; a legacy one; four segments on two devices with settings and an
// annotation; the last again with Hostile names (an OOM's stack among them).
var Seeds = [][]byte{
	{0x15, // traces, settings, 2 segments
		0, 0, 0x01, 8, 0, 1, 8, 1, 0, 0, 0, // device 0: allocated 1 MiB, free 1 MiB
		0, 16, 0x01, 8, 0, 2, 8, 1, 0, 0, 0, // device 0, 32 MiB on
		0, 5, 0, 0, 16, 1, 0, 8, 2, 0, 8, 3, 0, 8, 1, 0, 8}, // segment_alloc, alloc, free, alloc
	{0x12, // legacy, 2 segments
		0, 0, 0x02, 8, 0, 1, 4, 2, 1, 4, 1, 0, 0, 0,
		0, 16, 0x00, 16, 0, 2, 0, 0},
	{0x3d, // traces, settings, annotations, 4 segments on 2 devices
		0, 0, 0x01, 8, 0, 1, 8, 1, 0, 0, 0,
		0, 16, 0x11, 1, 0, 1, 15, 1, 0, 0, 0,
		1, 0, 0x00, 16, 0, 2, 0, 0,
		1, 40, 0x03, 4, 0, 0, 4, 1, 2, 4, 2, 0, 4, 1, 0, 0, 0,
		1, 5, 0, 0, 16, 1, 0, 8, 5, 0, 4, 2, 0, 8, 3, 0, 8, // ... with an oom
		0},
	{0x7d, // the same with Hostile names
		0, 0, 0x01, 8, 0, 1, 8, 1, 0, 0, 0,
		0, 16, 0x11, 1, 0, 1, 15, 1, 0, 0, 0,
		1, 0, 0x00, 16, 0, 2, 0, 0,
		1, 40, 0x03, 4, 0, 0, 4, 1, 2, 4, 2, 0, 4, 1, 0, 0, 0,
		1, 5, 0, 0, 16, 1, 0, 8, 5, 0, 4, 2, 0, 8, 3, 0, 8,
		0},
}

type specReader struct {
	b []byte
	i int
}

func (r *specReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}
