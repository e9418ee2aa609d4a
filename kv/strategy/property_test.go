package strategy

import (
	"errors"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// propSpecs pairs every strategy with an allocator it runs on.
var propSpecs = []struct{ strategy, alloc string }{
	{"contiguous-max", "caching"},
	{"contiguous-max:pow2", "caching"},
	{"contiguous-max:oracle", "caching"},
	{"contiguous-grow", "caching"},
	{"contiguous-grow", "caching:expandable_segments:True"},
	{"contiguous-max", "sizeclass"},
	{"paged:16", "caching"},
	{"paged:7", "direct"},
	{"vmm:2MiB", "vmm:2MiB"},
	{"vmm:64KiB", "vmm:64KiB"},
}

// modelSeq is the reference model of one live sequence.
type modelSeq struct{ prompt, tokens, n int }

// TestProperties drives every strategy with random admits, grows, releases
// and preemptions on a small device and checks after every step that:
//
//   - no token is lost or double counted: Stats.Tokens is Σ n × tokens of
//     the model, and token states are Σ n × tokens × bpt (paged: between the
//     tokens stored once, prompt + n × output, and n × tokens, since the
//     samples share the prompt's blocks);
//   - a failed call changes nothing, and fails only with ErrNoMemory or,
//     past a limit, ErrTooLong;
//   - the breakdown's parts are non-negative and add up to the memory held
//     for live sequences (checkUsage);
//
// and, at the end, that releasing every sequence returns all memory: the
// allocator's Allocated is back to its baseline (paged: every block back in
// the pool, then the pool back to the allocator on Close).
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ps := propSpecs[rapid.IntRange(0, len(propSpecs)-1).Draw(t, "spec")]
		env := newEnv(t, ps.alloc, 256*mem.MiB, 64*mem.MiB)
		env.MaxContext = 512
		baseline := env.Alloc.Stats().Allocated
		s, err := Parse(ps.strategy, env)
		if err != nil {
			t.Fatal(err)
		}
		_, isPaged := s.(*paged)
		live := map[SeqID]*modelSeq{}
		next := SeqID(1)
		ids := func() []SeqID { return sortedIDs(live) }
		check := func(step string) {
			var want, lo int64
			for _, m := range live {
				want += int64(m.n * m.tokens)
				lo += int64(m.prompt + m.n*(m.tokens-m.prompt))
			}
			if got := s.Stats().Tokens; got != want {
				t.Fatalf("%s: Stats.Tokens %d, model %d", step, got, want)
			}
			ts := s.Usage().TokenStates
			if isPaged {
				if ts < lo*tinyBPT || ts > want*tinyBPT {
					t.Fatalf("%s: paged token states %d outside [%d, %d]", step, ts, lo*tinyBPT, want*tinyBPT)
				}
			} else if ts != want*tinyBPT {
				t.Fatalf("%s: token states %d, model %d", step, ts, want*tinyBPT)
			}
			if err := checkUsage(s, env.Alloc, baseline); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			for id, m := range live {
				if n, ok := s.Tokens(id); !ok || n != m.tokens {
					t.Fatalf("%s: seq %d holds %d tokens (live %v), model %d", step, id, n, ok, m.tokens)
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			op := rapid.IntRange(0, 9).Draw(t, "op")
			switch {
			case op < 3 || len(live) == 0:
				r := Request{
					Prompt:     rapid.IntRange(1, 520).Draw(t, "prompt"),
					MaxOutput:  256,
					TrueOutput: rapid.IntRange(0, 300).Draw(t, "true"),
					N:          rapid.IntRange(1, 3).Draw(t, "n"),
				}
				err := s.Admit(next, r)
				switch {
				case err == nil:
					live[next] = &modelSeq{prompt: r.Prompt, tokens: r.Prompt, n: r.N}
				case errors.Is(err, ErrNoMemory) || (errors.Is(err, ErrTooLong) && r.Prompt > env.MaxContext):
					if _, ok := s.Tokens(next); ok {
						t.Fatalf("failed admit left seq %d live", next)
					}
				default:
					t.Fatalf("admit %+v: %v", r, err)
				}
				next++
				check("admit")
			case op < 8:
				id := rapid.SampledFrom(ids()).Draw(t, "grow-id")
				k := rapid.IntRange(0, 80).Draw(t, "k")
				err := s.Grow(id, k)
				switch {
				case err == nil:
					live[id].tokens += k
				case errors.Is(err, ErrNoMemory) || errors.Is(err, ErrTooLong):
				default:
					t.Fatalf("grow %d by %d: %v", id, k, err)
				}
				check("grow")
			default:
				id := rapid.SampledFrom(ids()).Draw(t, "drop-id")
				f := s.Release
				if op == 9 {
					f = s.Preempt
				}
				if err := f(id); err != nil {
					t.Fatal(err)
				}
				delete(live, id)
				check("release")
			}
		}
		for _, id := range ids() {
			if err := s.Release(id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
		}
		check("release all")
		u := s.Usage()
		if u.Held() != 0 || u.CachedIdle != 0 {
			t.Fatalf("after releasing everything: %v", u)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := env.Alloc.Stats().Allocated; got != baseline {
			t.Fatalf("allocator holds %d bytes after Close, baseline %d", got, baseline)
		}
		if st := s.Stats(); st.Live != 0 || st.Tokens != 0 {
			t.Fatalf("stats after Close: %v", st)
		}
	})
}
