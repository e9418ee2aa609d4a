// Package gensnap writes synthetic PyTorch memory snapshots of an
// LLM-serving allocation pattern, of a requested size, for benchmarks and
// tests of the snapshot reader and the analysis (issue 25).
//
// The history is consistent: it is what our model of the caching allocator
// (alloc/caching, default settings) does with the requests, recorded the way
// PyTorch records it, so a replay of the file matches address for address
// and the final segments are the model's state after the last event. The
// requests: model weights and a KV cache allocated once, then serving
// steps, each a forward pass over a batch of T tokens (T from the decode
// buckets 1 to 512 a CUDA-graph server uses, or a prefill chunk of up to
// 2,048): per layer the activations of attention and MLP, allocated and
// freed in the order a transformer block does, a few small tensors of
// sampling metadata, and the logits. With GraphPool the server captures
// CUDA graphs first, as vLLM and SGLang do: one forward pass per decode
// bucket, every request routed to one private pool (GraphPoolID, the
// segments it obtains carry it as segment_pool_id, the trace entries do
// not); a serving step of a captured bucket then replays its graph and
// allocates only its sampling metadata, and prefill chunks run eagerly in
// the default pools. Every OOMEvery-th step records an oom
// entry (a request of 1 TiB that the device could not serve, as PyTorch
// writes it: no alloc event, device_free set).
//
// The pickle is written as CPython's pickler writes protocol 4: FRAME
// opcodes every 64 KiB, every dict, list, tuple and str memoized, a value
// met again referred to through BINGET/LONG_BINGET, SETITEMS and APPENDS in
// batches of 1,000, integers in the fewest bytes. Stacks are shared as
// torch.cuda.memory._snapshot() shares them: one dict per distinct frame,
// one list per captured traceback, which an alloc's free_requested and
// free_completed entries (and its block, while live) refer to again. Each
// traceback has MinDepth (5) to Options.Depth (20 by default) frames.
//
// Write keeps the events in memory (about 40 bytes each, a fifth of what
// each costs in the file) because the segments, written first, are the
// state after the last one.
package gensnap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

// Options describes the snapshot to write.
type Options struct {
	// Bytes is the size to reach: serving steps are added until the
	// pickle would be at least this long (it ends within one step of it,
	// a few KiB to a few hundred KiB past it).
	Bytes int64
	// Seed picks the batch sizes and the stacks.
	Seed uint64
	// Layers of the model (default 32) and Hidden, its hidden size
	// (default 4096): an activation of T tokens is T × Hidden × 2 bytes.
	Layers, Hidden int
	// OOMEvery records an oom entry every OOMEvery-th step; 0: none.
	OOMEvery int
	// GraphPool captures a CUDA graph per decode bucket into the private
	// pool GraphPoolID before serving (see the package doc).
	GraphPool bool
	// Pinned allocates this many long-lived tensors (sizes from 4 KiB to
	// 40 MiB, log-uniform) before serving, each from its own call site
	// where Sites allows, and frees every third of them again, so the
	// final snapshot holds on the order of Pinned/10 to Pinned segments
	// and free gaps between live blocks; 0: none.
	Pinned int
	// Sites is the number of distinct call sites (default 400) and Depth
	// the most frames a site's stack has (0: the default, 20; else at
	// least MinDepth, which Validate and Write hold it to).
	Sites, Depth int
	// Frames is the number of distinct frames stacks draw from (default 3,000).
	Frames int
	// Leak allocates this many tensors of LeakSize bytes after the last
	// serving step and keeps them, all from one call site of their own
	// (LeakSite), so that two files written with the same options but
	// Leak differ by that site's memory alone (tests of diff's
	// attribution).
	Leak     int
	LeakSize int64
}

// MinDepth is the fewest frames a call site's stack has (a few framework
// frames under model frames), so the least Options.Depth can be;
// defaultDepth is Depth's default.
const (
	MinDepth     = 5
	defaultDepth = 20
)

// Validate returns an error naming the first option Write cannot honour:
// a negative count or size (0 is each one's default), or a Depth below
// MinDepth (but 0), which gave stacks of up to 20 frames instead of
// refusing.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", o.Layers}, {"hidden", o.Hidden}, {"sites", o.Sites}, {"frames", o.Frames},
		{"oom-every", o.OOMEvery}, {"pinned", o.Pinned}, {"leak", o.Leak}} {
		if f.v < 0 {
			return fmt.Errorf("gensnap: %s %d: must not be negative (0: the default)", f.name, f.v)
		}
	}
	if o.Bytes < 0 || o.LeakSize < 0 {
		return fmt.Errorf("gensnap: bytes %d, leak size %d: must not be negative", o.Bytes, o.LeakSize)
	}
	if o.Depth != 0 && o.Depth < MinDepth {
		return fmt.Errorf("gensnap: depth %d: a stack has at least %d frames, so the depth can be no less (0: the default, %d)",
			o.Depth, MinDepth, defaultDepth)
	}
	return nil
}

// LeakSite is the first frame of the stack of Options.Leak's tensors.
const LeakSite = "app/kv_offload.py:77 grow_cache"

// GraphPoolID is the private pool of the captured graphs (a CUDA graph
// pool's MempoolId_t: graph pools count from (1, 0)).
var GraphPoolID = alloc.PoolID{1, 0}

// Stats says what was written.
type Stats struct {
	Bytes                     int64
	Segments, Blocks          int
	Events, Allocs, OOMs      int
	Frames, Tracebacks, Steps int
	// PrivateSegments and PrivateAllocs are the graph pool's segments at
	// the end and the allocs routed to it (GraphPool).
	PrivateSegments, PrivateAllocs int
	// PeakReserved is the most the allocator reserved after any alloc.
	PeakReserved int64
}

type action uint8

const (
	actSegmentAlloc action = iota
	actAlloc
	actFreeRequested
	actFreeCompleted
	actOOM
)

var actionNames = [...]string{"segment_alloc", "alloc", "free_requested", "free_completed", "oom"}

// event is one trace entry: tb is the traceback (an index into tbs) whose
// frames it carries.
type event struct {
	addr uint64
	size int64
	time int64
	tb   int32
	act  action
}

// traceback is one captured stack: its frames (indexes into the frame
// table) and, once written, its memo index.
type traceback struct {
	frames []int32
	memo   int64 // -1 until written
}

type frame struct {
	file, name string
	line       int
	memo       int64 // -1 until written
}

type gen struct {
	o      Options
	rng    *rand.Rand
	a      *caching.Allocator
	events []event
	tbs    []traceback
	frames []frame
	sites  [][]int32 // the frames of each call site
	live   map[uint64]int32
	time   int64
	va     uint64
	steps  int
	ooms   int
	allocs int
	est    int64 // estimated bytes of the trace written so far
	done   bool  // the history is complete
	// capturing routes allocs to the graph pool; private are its
	// segments, by address; privateAllocs counts its allocs.
	capturing     bool
	private       map[uint64]bool
	privateAllocs int
	peak          int64
}

// Write writes the snapshot to w; options that Validate refuses are
// refused before anything is written.
func Write(w io.Writer, o Options) (Stats, error) {
	if err := o.Validate(); err != nil {
		return Stats{}, err
	}
	if o.Layers <= 0 {
		o.Layers = 32
	}
	if o.Hidden <= 0 {
		o.Hidden = 4096
	}
	if o.Sites <= 0 {
		o.Sites = 400
	}
	if o.Depth == 0 {
		o.Depth = defaultDepth
	}
	if o.Frames <= 0 {
		o.Frames = 3000
	}
	// The pinned tensors average about 5 MiB and may each take a 20 MiB
	// segment of their own.
	dev, err := mem.NewDevice(80<<30+int64(o.Pinned)*(24<<20), 0)
	if err != nil {
		return Stats{}, err
	}
	g := &gen{o: o, rng: rand.New(rand.NewPCG(o.Seed, 25)), live: map[uint64]int32{},
		time: 1_764_000_000_000_000, va: 0x7f0000000000, private: map[uint64]bool{}}
	dev.SetVAHook(g.reserve)
	a, err := caching.New(dev, caching.Config{})
	if err != nil {
		return Stats{}, err
	}
	g.a = a
	g.makeSites()
	if err := g.run(); err != nil {
		return Stats{}, err
	}
	return g.write(w)
}

// reserve gives a new segment the next address and records its
// segment_alloc, which PyTorch writes before the alloc it serves.
func (g *gen) reserve(size int64) uint64 {
	addr := g.va
	g.va += uint64(mem.RoundUp(size, 2<<20)) + 2<<20
	if g.done {
		return addr // a probe of Layout's MaxAllocatable, not a segment
	}
	g.events = append(g.events, event{act: actSegmentAlloc, addr: addr, size: size, time: g.tick(), tb: -1})
	g.est += 40
	if g.capturing {
		g.private[addr] = true
	}
	return addr
}

func (g *gen) tick() int64 {
	g.time += 1 + int64(g.rng.IntN(40))
	return g.time
}

// Call sites: a few framework frames under model frames, 5 to Depth in
// all (20 by default), Sites of them (400 by default).

func (g *gen) makeSites() {
	files := []string{"vllm/model_executor/models/llama.py", "vllm/model_executor/layers/linear.py",
		"vllm/attention/layer.py", "vllm/model_executor/layers/activation.py", "vllm/worker/model_runner.py",
		"vllm/v1/worker/gpu_model_runner.py", "torch/nn/modules/module.py", "vllm/model_executor/layers/layernorm.py",
		"vllm/v1/sample/sampler.py", "vllm/engine/llm_engine.py", "vllm/entrypoints/openai/api_server.py"}
	names := []string{"forward", "_call_impl", "_wrapped_call_impl", "apply", "execute_model", "sample",
		"_run_engine", "step", "run_forward", "__call__", "wrapper", "decorate_context", "run"}
	for i := 0; i < g.o.Frames; i++ {
		g.frames = append(g.frames, frame{file: files[g.rng.IntN(len(files))],
			name: names[g.rng.IntN(len(names))], line: 20 + g.rng.IntN(1800), memo: -1})
	}
	for i := 0; i < g.o.Sites; i++ {
		n := MinDepth + g.rng.IntN(g.o.Depth-MinDepth+1)
		s := make([]int32, n)
		for j := range s {
			s[j] = int32(g.rng.IntN(len(g.frames)))
		}
		g.sites = append(g.sites, s)
	}
}

func (g *gen) alloc(size int64, site int) (alloc.Block, error) {
	tb := int32(len(g.tbs))
	g.tbs = append(g.tbs, traceback{frames: g.sites[site%len(g.sites)], memo: -1})
	var b alloc.Block
	var err error
	if g.capturing {
		b, err = g.a.AllocIn(GraphPoolID, size, 0)
		g.privateAllocs++
	} else {
		b, err = g.a.Alloc(size, 0)
	}
	if err != nil {
		return b, fmt.Errorf("gensnap: the model ran out of memory at %d bytes (reduce Layers or Hidden): %w", size, err)
	}
	g.peak = max(g.peak, g.a.Stats().Reserved)
	g.events = append(g.events, event{act: actAlloc, addr: b.Addr, size: b.Size, time: g.tick(), tb: tb})
	g.live[b.Addr] = tb
	g.allocs++
	g.est += 50 + 2*int64(len(g.tbs[tb].frames)) + 10
	return b, nil
}

func (g *gen) free(b alloc.Block) error {
	tb := g.live[b.Addr]
	delete(g.live, b.Addr)
	if err := g.a.Free(b.Handle); err != nil {
		return err
	}
	g.events = append(g.events,
		event{act: actFreeRequested, addr: b.Addr, size: b.Size, time: g.tick(), tb: tb},
		event{act: actFreeCompleted, addr: b.Addr, size: b.Size, time: g.tick(), tb: tb})
	g.est += 2 * 56
	return nil
}

// run drives the model: weights and KV cache, then serving steps until the
// estimate reaches the size asked for.
func (g *gen) run() error {
	h := int64(g.o.Hidden)
	site := 0
	next := func() int { site++; return site }
	for l := 0; l < g.o.Layers; l++ {
		for _, sz := range []int64{3 * h * h * 2, h * h * 2, 2 * 4 * h * h * 2, 4 * h * h * 2, h * 2, h * 2} {
			if _, err := g.alloc(sz, next()); err != nil {
				return err
			}
		}
	}
	if _, err := g.alloc(int64(g.o.Layers)*(8<<20), next()); err != nil { // the KV cache
		return err
	}
	if err := g.pinned(next()); err != nil {
		return err
	}
	buckets := []int64{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}
	if g.o.GraphPool {
		// Captured largest first, as vLLM does, all into one pool.
		g.capturing = true
		for i := len(buckets) - 1; i >= 0; i-- {
			if err := g.step(buckets[i]); err != nil {
				return err
			}
		}
		g.capturing = false
	}
	for g.est*6/5 < g.o.Bytes {
		g.steps++
		t := buckets[g.rng.IntN(len(buckets))]
		prefill := g.rng.IntN(8) == 0
		if prefill {
			t = 1 + int64(g.rng.IntN(2048)) // a prefill chunk
		}
		var err error
		if g.o.GraphPool && !prefill {
			err = g.sample(t) // the captured graph replays: no allocation
		} else {
			err = g.step(t)
		}
		if err != nil {
			return err
		}
		if g.o.OOMEvery > 0 && g.steps%g.o.OOMEvery == 0 {
			g.events = append(g.events, event{act: actOOM, size: 1 << 40, time: g.tick(), tb: g.newTB(7)})
			g.ooms++
			g.est += 80
		}
	}
	return g.leak()
}

// leak allocates Options.Leak tensors from a stack whose first frame is
// LeakSite, above one of the model's sites, and keeps them.
func (g *gen) leak() error {
	if g.o.Leak <= 0 {
		return nil
	}
	top := int32(len(g.frames))
	g.frames = append(g.frames, frame{file: "app/kv_offload.py", name: "grow_cache", line: 77, memo: -1})
	g.sites = append(g.sites, append([]int32{top}, g.sites[0]...))
	site := len(g.sites) - 1
	for i := 0; i < g.o.Leak; i++ {
		if _, err := g.alloc(g.o.LeakSize, site); err != nil {
			return err
		}
	}
	return nil
}

// pinned allocates Options.Pinned long-lived tensors from consecutive
// call sites starting at site, then frees every third.
func (g *gen) pinned(site int) error {
	var blocks []alloc.Block
	for i := 0; i < g.o.Pinned; i++ {
		// log-uniform from 4 KiB (2^12) to 40 MiB (about 2^25.3)
		size := int64(math.Exp2(12 + 13.3*g.rng.Float64()))
		b, err := g.alloc(size, site+i)
		if err != nil {
			return err
		}
		blocks = append(blocks, b)
	}
	for i := 0; i < len(blocks); i += 3 {
		if err := g.free(blocks[i]); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) newTB(site int) int32 {
	g.tbs = append(g.tbs, traceback{frames: g.sites[site%len(g.sites)], memo: -1})
	g.est += 10 + 2*int64(len(g.sites[site%len(g.sites)]))
	return int32(len(g.tbs) - 1)
}

// step is one forward pass over t tokens.
func (g *gen) step(t int64) error {
	h := int64(g.o.Hidden)
	act := t * h * 2
	base := 100 + int(t%7)*40
	resid, err := g.alloc(act, base)
	if err != nil {
		return err
	}
	for l := 0; l < g.o.Layers; l++ {
		s := base + 1 + l%8*4
		norm, err := g.alloc(act, s)
		if err != nil {
			return err
		}
		qkv, err := g.alloc(3*act, s+1)
		if err != nil {
			return err
		}
		if err := g.free(norm); err != nil {
			return err
		}
		attn, err := g.alloc(act, s+2)
		if err != nil {
			return err
		}
		if err := g.free(qkv); err != nil {
			return err
		}
		out, err := g.alloc(act, s+3)
		if err != nil {
			return err
		}
		if err := g.free(attn); err != nil {
			return err
		}
		up, err := g.alloc(8*act, s+4)
		if err != nil {
			return err
		}
		down, err := g.alloc(act, s+5)
		if err != nil {
			return err
		}
		for _, b := range []alloc.Block{up, out} {
			if err := g.free(b); err != nil {
				return err
			}
		}
		if err := g.free(down); err != nil {
			return err
		}
	}
	small, err := g.metadata(t)
	if err != nil {
		return err
	}
	logits, err := g.alloc(t*32000*4, 310)
	if err != nil {
		return err
	}
	for _, b := range append(small, logits, resid) {
		if err := g.free(b); err != nil {
			return err
		}
	}
	return nil
}

// metadata allocates a step's sampling metadata: three small tensors.
func (g *gen) metadata(t int64) ([]alloc.Block, error) {
	var small []alloc.Block
	for i := 0; i < 3; i++ {
		b, err := g.alloc(t*4*int64(1+i)+512, 300+i)
		if err != nil {
			return nil, err
		}
		small = append(small, b)
	}
	return small, nil
}

// sample is a step whose forward pass replays a captured graph: only the
// sampling metadata is allocated, eagerly, and freed.
func (g *gen) sample(t int64) error {
	small, err := g.metadata(t)
	if err != nil {
		return err
	}
	for _, b := range small {
		if err := g.free(b); err != nil {
			return err
		}
	}
	return nil
}

// write pickles the snapshot.
func (g *gen) write(w io.Writer) (Stats, error) {
	p := newPickler(w)
	st := Stats{Events: len(g.events), Allocs: g.allocs, OOMs: g.ooms, Frames: len(g.frames),
		Tracebacks: len(g.tbs), Steps: g.steps, PrivateAllocs: g.privateAllocs, PeakReserved: g.peak}
	g.done = true
	l := g.a.Layout()
	p.dict(func() {
		p.key("segments")
		p.list(len(l.Segments), func(i int) {
			s := l.Segments[i]
			st.Segments++
			var allocated, active, requested int64
			for _, b := range s.Blocks {
				if b.State != mem.Free {
					allocated += b.Size
					active += b.Size
					requested += b.Requested
				}
			}
			p.dict(func() {
				p.key("device")
				p.int(0)
				p.key("address")
				p.int(int64(s.Addr))
				p.key("total_size")
				p.int(s.Size)
				p.key("allocated_size")
				p.int(allocated)
				p.key("active_size")
				p.int(active)
				p.key("requested_size")
				p.int(requested)
				p.key("stream")
				p.int(int64(s.Stream))
				p.key("segment_type")
				p.str(s.Pool)
				p.key("segment_pool_id")
				if g.private[s.Addr] {
					st.PrivateSegments++
					p.poolID(GraphPoolID)
				} else {
					p.tuple00()
				}
				p.key("is_expandable")
				p.bool(false)
				p.key("frames")
				p.emptyList()
				p.key("blocks")
				p.list(len(s.Blocks), func(j int) {
					b := s.Blocks[j]
					st.Blocks++
					p.dict(func() {
						p.key("address")
						p.int(int64(b.Addr))
						p.key("size")
						p.int(b.Size)
						p.key("requested_size")
						p.int(b.Requested)
						p.key("state")
						if b.State == mem.Free {
							p.str("inactive")
						} else {
							p.str("active_allocated")
						}
						p.key("frames")
						if tb, ok := g.live[b.Addr]; ok && b.State != mem.Free {
							g.tracebackList(p, tb)
						} else {
							p.emptyList()
						}
					})
				})
			})
		})
		p.key("device_traces")
		p.list(1, func(int) {
			p.list(len(g.events), func(i int) {
				e := g.events[i]
				p.dict(func() {
					p.key("action")
					p.str(actionNames[e.act])
					p.key("addr")
					p.int(int64(e.addr))
					p.key("size")
					p.int(e.size)
					p.key("stream")
					p.int(0)
					p.key("time_us")
					p.int(e.time)
					if e.act == actOOM {
						p.key("device_free")
						p.int(1 << 30)
					}
					p.key("frames")
					if e.tb >= 0 {
						g.tracebackList(p, e.tb)
					} else {
						p.emptyList()
					}
				})
			})
		})
		p.key("allocator_settings")
		p.dict(func() {
			p.key("PYTORCH_CUDA_ALLOC_CONF")
			p.str("")
			p.key("max_split_size")
			p.int(-1)
			p.key("expandable_segments")
			p.bool(false)
		})
	})
	err := p.finish()
	st.Bytes = p.n
	return st, err
}

// tracebackList writes traceback tb's frames list, or a reference to it.
func (g *gen) tracebackList(p *pickler, tb int32) {
	t := &g.tbs[tb]
	if t.memo >= 0 {
		p.get(t.memo)
		return
	}
	t.memo = p.list(len(t.frames), func(i int) {
		f := &g.frames[t.frames[i]]
		if f.memo >= 0 {
			p.get(f.memo)
			return
		}
		f.memo = p.dict(func() {
			p.key("filename")
			p.str(f.file)
			p.key("line")
			p.int(int64(f.line))
			p.key("name")
			p.str(f.name)
		})
	})
}

// pickler writes protocol 4 as CPython does.
type pickler struct {
	w     *bufio.Writer
	frame []byte
	n     int64 // bytes written, frame headers included
	memo  int64 // next memo index
	strs  map[string]int64
	err   error
	tuple int64 // memo index of (0, 0); -1 until written
	pool  int64 // memo index of GraphPoolID; -1 until written
	// batch counts the items of the innermost dict or list batch.
}

const frameTarget = 64 << 10

// Pickle opcodes written.
const (
	opProto       = 0x80
	opFrame       = 0x95
	opStop        = '.'
	opMark        = '('
	opEmptyDict   = '}'
	opEmptyList   = ']'
	opSetItem     = 's'
	opSetItems    = 'u'
	opAppend      = 'a'
	opAppends     = 'e'
	opMemoize     = 0x94
	opBinGet      = 'h'
	opLongBinGet  = 'j'
	opBinInt1     = 'K'
	opBinInt2     = 'M'
	opBinInt      = 'J'
	opLong1       = 0x8a
	opShortBinUni = 0x8c
	opBinUnicode  = 'X'
	opNewTrue     = 0x88
	opNewFalse    = 0x89
	opTuple2      = 0x86
)

func newPickler(w io.Writer) *pickler {
	p := &pickler{w: bufio.NewWriterSize(w, 1<<20), strs: map[string]int64{}, tuple: -1, pool: -1}
	p.raw(opProto, 4)
	p.n += 2
	return p
}

func (p *pickler) raw(b ...byte) {
	if p.err == nil {
		_, p.err = p.w.Write(b)
	}
}

func (p *pickler) op(b ...byte) {
	p.frame = append(p.frame, b...)
}

// value is called before each value is written: a frame ends between
// values, never inside an opcode.
func (p *pickler) value() {
	if len(p.frame) >= frameTarget {
		p.commit()
	}
}

func (p *pickler) commit() {
	if len(p.frame) == 0 {
		return
	}
	var h [9]byte
	h[0] = opFrame
	binary.LittleEndian.PutUint64(h[1:], uint64(len(p.frame)))
	p.raw(h[:]...)
	p.raw(p.frame...)
	p.n += int64(len(h) + len(p.frame))
	p.frame = p.frame[:0]
}

func (p *pickler) finish() error {
	p.op(opStop)
	p.commit()
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}

func (p *pickler) memoize() int64 {
	p.op(opMemoize)
	p.memo++
	return p.memo - 1
}

func (p *pickler) get(i int64) {
	p.value()
	if i < 256 {
		p.op(opBinGet, byte(i))
		return
	}
	var b [5]byte
	b[0] = opLongBinGet
	binary.LittleEndian.PutUint32(b[1:], uint32(i))
	p.op(b[:]...)
}

func (p *pickler) key(k string) { p.str(k) }

func (p *pickler) str(s string) {
	p.value()
	if i, ok := p.strs[s]; ok {
		p.get(i)
		return
	}
	if len(s) < 256 {
		p.op(opShortBinUni, byte(len(s)))
	} else {
		var b [5]byte
		b[0] = opBinUnicode
		binary.LittleEndian.PutUint32(b[1:], uint32(len(s)))
		p.op(b[:]...)
	}
	p.op([]byte(s)...)
	p.strs[s] = p.memoize()
}

func (p *pickler) int(v int64) {
	p.value()
	switch {
	case v >= 0 && v < 1<<8:
		p.op(opBinInt1, byte(v))
	case v >= 0 && v < 1<<16:
		p.op(opBinInt2, byte(v), byte(v>>8))
	case v >= -1<<31 && v < 1<<31:
		var b [5]byte
		b[0] = opBinInt
		binary.LittleEndian.PutUint32(b[1:], uint32(v))
		p.op(b[:]...)
	default:
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], uint64(v))
		n := 8
		for n > 1 && ((le[n-1] == 0 && le[n-2] < 0x80) || (le[n-1] == 0xff && le[n-2] >= 0x80)) {
			n--
		}
		p.op(opLong1, byte(n))
		p.op(le[:n]...)
	}
}

func (p *pickler) bool(b bool) {
	p.value()
	if b {
		p.op(opNewTrue)
	} else {
		p.op(opNewFalse)
	}
}

func (p *pickler) tuple00() {
	p.value()
	if p.tuple >= 0 {
		p.get(p.tuple)
		return
	}
	p.op(opBinInt1, 0, opBinInt1, 0, opTuple2)
	p.tuple = p.memoize()
}

// poolID writes a pool id (a tuple of two small non-negative ints), or a
// reference to the one written before.
func (p *pickler) poolID(id alloc.PoolID) {
	p.value()
	if p.pool >= 0 {
		p.get(p.pool)
		return
	}
	p.op(opBinInt1, byte(id[0]), opBinInt1, byte(id[1]), opTuple2)
	p.pool = p.memoize()
}

func (p *pickler) emptyList() {
	p.value()
	p.op(opEmptyList)
	p.memoize()
}

// dict writes a dict whose items body writes (each a key, then a value),
// in one batch: snapshot dicts have fewer than 1,000 keys.
func (p *pickler) dict(body func()) int64 {
	p.value()
	p.op(opEmptyDict)
	m := p.memoize()
	p.op(opMark)
	body()
	p.op(opSetItems)
	return m
}

// list writes a list of n items, item(i) writing each, in batches of
// 1,000 (APPEND for a batch of one).
func (p *pickler) list(n int, item func(i int)) int64 {
	p.value()
	p.op(opEmptyList)
	m := p.memoize()
	for lo := 0; lo < n; lo += 1000 {
		hi := min(n, lo+1000)
		if hi-lo == 1 {
			item(lo)
			p.op(opAppend)
			continue
		}
		p.op(opMark)
		for i := lo; i < hi; i++ {
			item(i)
		}
		p.op(opAppends)
	}
	return m
}
