package blockpool

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the commented scenarios in testdata/scripts. Rerun with -rewrite
// to regenerate their output, and keep the diff only if you understand why it
// changed.
//
// Commands:
//
//	init blocks=N size=B [caching=off]    a new pool
//	alloc seq=S tokens=N                  a new sequence of N fresh tokens
//	append seq=S tokens=N                 N more fresh tokens
//	write seq=S                           one more token (copy-on-write if shared)
//	free seq=S                            release the sequence
//	cache seq=S                           register its full blocks
//	hit seq=S prefix-of=T [tokens=N] [new=M]
//	                                      a new sequence whose first N tokens (default
//	                                      all) are T's, plus M fresh ones; it reuses
//	                                      the cached prefix as vLLM does (the block of
//	                                      the last prompt token is never a hit)
//	fork seq=S from=T                     a new sequence sharing T's blocks
//	seqs                                  every sequence, sorted by name
//	queue                                 the free queue, head first (* = cached)
//	stats                                 Pool.Stats
//
// After every command the harness checks the pool's invariants, each
// sequence's, that every block's reference count equals the number of block
// tables holding it, and that the slot breakdown sums to the pool's slots.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		e := &scriptEnv{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.handle(t, d)
			if e.pool != nil {
				if err := e.check(); err != nil {
					t.Fatalf("%s: after %q: %v", d.Pos, d.Cmd, err)
				}
			}
			return out
		})
	})
}

type scriptSeq struct {
	seq    *Sequence
	tokens []int32 // the token ids, for hashing
}

type scriptEnv struct {
	pool *Pool
	seqs map[string]*scriptSeq
	// toks keeps every sequence's tokens, also after free, so a later
	// request can share the prefix of one that ended.
	toks map[string][]int32
	next int32 // next fresh token id
}

func (e *scriptEnv) fresh(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		e.next++
		out[i] = e.next
	}
	return out
}

func (e *scriptEnv) handle(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "init" && e.pool == nil {
		t.Fatalf("%s: %s before init", d.Pos, d.Cmd)
	}
	var name string
	if d.HasArg("seq") {
		d.ScanArgs(t, "seq", &name)
	}
	get := func(key string) *scriptSeq {
		var n string
		d.ScanArgs(t, key, &n)
		s, ok := e.seqs[n]
		if !ok {
			t.Fatalf("%s: no sequence %q", d.Pos, n)
		}
		return s
	}
	newSeq := func() {
		if _, ok := e.seqs[name]; ok {
			t.Fatalf("%s: sequence %q exists", d.Pos, name)
		}
	}
	switch d.Cmd {
	case "init":
		var blocks, size int
		d.ScanArgs(t, "blocks", &blocks)
		d.ScanArgs(t, "size", &size)
		var opts Options
		if d.HasArg("caching") {
			var c string
			d.ScanArgs(t, "caching", &c)
			opts.DisablePrefixCaching = c == "off"
		}
		p, err := New(blocks, size, opts)
		if err != nil {
			return "error: " + err.Error()
		}
		e.pool, e.seqs, e.toks, e.next = p, map[string]*scriptSeq{}, map[string][]int32{}, 0
		return e.queue()

	case "alloc":
		newSeq()
		var n int
		d.ScanArgs(t, "tokens", &n)
		s := &scriptSeq{seq: NewSequence(e.pool)}
		if err := s.seq.Append(n); err != nil {
			return "error: " + err.Error()
		}
		s.tokens = e.fresh(n)
		e.seqs[name], e.toks[name] = s, s.tokens
		return e.describe(name)

	case "append", "write":
		s := get("seq")
		n := 1
		if d.Cmd == "append" {
			d.ScanArgs(t, "tokens", &n)
		}
		before := append([]BlockID(nil), s.seq.Blocks()...)
		if err := s.seq.Append(n); err != nil {
			return "error: " + err.Error()
		}
		s.tokens = append(s.tokens, e.fresh(n)...)
		e.toks[name] = s.tokens
		var b strings.Builder
		if k := len(before) - 1; k >= 0 && before[k] != s.seq.Blocks()[k] {
			fmt.Fprintf(&b, "copy-on-write: block %d -> %d\n", before[k], s.seq.Blocks()[k])
		}
		b.WriteString(e.describe(name))
		return b.String()

	case "free":
		s := get("seq")
		if err := s.seq.Release(); err != nil {
			return "error: " + err.Error()
		}
		delete(e.seqs, name)
		return e.queue()

	case "cache":
		s := get("seq")
		hashes := HashChain(nil, NoParent, s.tokens, e.pool.BlockSize(), 0)
		n, err := s.seq.Cache(hashes)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("cached %d blocks (%d in the pool)", n, e.pool.NumCached())

	case "hit":
		newSeq()
		var from string
		d.ScanArgs(t, "prefix-of", &from)
		src, ok := e.toks[from]
		if !ok {
			t.Fatalf("%s: no sequence %q", d.Pos, from)
		}
		n, extra := len(src), 0
		d.MaybeScanArgs(t, "tokens", &n)
		d.MaybeScanArgs(t, "new", &extra)
		tokens := append(append([]int32(nil), src[:n]...), e.fresh(extra)...)
		// vLLM looks up at most len−1 tokens: the last prompt token is
		// always computed, so its block is never a hit.
		bs := e.pool.BlockSize()
		hashes := HashChain(nil, NoParent, tokens[:max(len(tokens)-1, 0)], bs, 0)
		s := &scriptSeq{seq: NewSequence(e.pool), tokens: tokens}
		k, err := s.seq.MatchPrefix(hashes)
		if err != nil {
			return "error: " + err.Error()
		}
		if err := s.seq.Append(len(tokens) - k*bs); err != nil {
			// An engine would not admit the request: give the hits back.
			if rerr := s.seq.Release(); rerr != nil {
				t.Fatal(rerr)
			}
			return fmt.Sprintf("hit %d blocks\nerror: %s", k, err)
		}
		e.seqs[name], e.toks[name] = s, tokens
		return fmt.Sprintf("hit %d blocks\n%s", k, e.describe(name))

	case "fork":
		newSeq()
		src := get("from")
		e.seqs[name] = &scriptSeq{seq: src.seq.Fork(), tokens: append([]int32(nil), src.tokens...)}
		e.toks[name] = e.seqs[name].tokens
		return e.describe(name)

	case "seqs":
		var b strings.Builder
		for _, n := range e.names() {
			b.WriteString(e.describe(n))
		}
		return b.String()

	case "queue":
		return e.queue()

	case "stats":
		return e.pool.Stats().String()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (e *scriptEnv) names() []string {
	names := make([]string, 0, len(e.seqs))
	for n := range e.seqs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// describe renders one sequence: its table, the reference counts of its
// blocks, and its waste.
func (e *scriptEnv) describe(name string) string {
	s := e.seqs[name].seq
	refs := make([]int, len(s.Blocks()))
	for i, id := range s.Blocks() {
		refs[i] = e.pool.RefCount(id)
	}
	return fmt.Sprintf("%s: tokens=%d blocks=%v refs=%v waste=%d\n", name, s.Tokens(), s.Blocks(), refs, s.Waste())
}

// queue renders the free queue, head (next to be reused) first; a * marks a
// block that still holds a cached prefix.
func (e *scriptEnv) queue() string {
	var b strings.Builder
	b.WriteString("queue:")
	for _, id := range e.pool.FreeQueue(nil) {
		fmt.Fprintf(&b, " %d", id)
		if _, ok := e.pool.CachedHash(id); ok {
			b.WriteString("*")
		}
	}
	fmt.Fprintf(&b, "\nusage=%.4f", e.pool.Usage())
	return b.String()
}

func (e *scriptEnv) check() error {
	if err := e.pool.CheckInvariants(); err != nil {
		return err
	}
	holders := make([]int, e.pool.NumBlocks())
	for _, n := range e.names() {
		s := e.seqs[n].seq
		if err := s.checkInvariants(); err != nil {
			return fmt.Errorf("sequence %s: %w", n, err)
		}
		for _, id := range s.Blocks() {
			holders[id]++
		}
	}
	for id, h := range holders {
		if r := e.pool.RefCount(BlockID(id)); r != h {
			return fmt.Errorf("block %d: ref %d, held by %d tables", id, r, h)
		}
	}
	return checkSlotSum(e.pool.Stats())
}

// checkSlotSum checks that the slot breakdown covers the pool exactly.
func checkSlotSum(st Stats) error {
	sum := st.TokenSlots + st.ReservedSlots + st.InternalSlots + st.CachedIdleSlots + st.FreeSlots
	if want := int64(st.BlockSize) * int64(st.NumBlocks-1); sum != want {
		return fmt.Errorf("slot classes sum to %d, want %d (%+v)", sum, want, st)
	}
	if st.TokenSlots < 0 || st.ReservedSlots < 0 || st.InternalSlots < 0 || st.CachedIdleSlots < 0 || st.FreeSlots < 0 {
		return fmt.Errorf("negative slot class: %+v", st)
	}
	return nil
}
