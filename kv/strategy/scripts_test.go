package strategy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/mem"
)

// TestScripts runs the commented scenarios in testdata/scripts. Rerun with
// -rewrite to regenerate their output, and keep the diff only if you
// understand why it changed.
//
// Commands (the model is tinyModel: 8 KiB per token, 2048-token context):
//
//	init strategy=S alloc=A [device=1GiB] [pool=512MiB]   a strategy over a fresh allocator
//	admit seq=N prompt=P [max-output=M] [true-output=T] [n=K]
//	grow seq=N tokens=K
//	release seq=N
//	preempt seq=N
//	usage                                  the Breakdown, and what is held for sequences
//	stats                                  the strategy's Stats
//	alloc                                  the allocator's reserved, allocated and cached free bytes
//	close
//
// After every command the harness checks the breakdown against the
// allocator (checkUsage).
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		var e scriptEnv
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.handle(t, d)
			if e.s != nil {
				if err := checkUsage(e.s, e.env.Alloc, e.baseline); err != nil {
					t.Fatalf("%s: after %q: %v", d.Pos, d.Cmd, err)
				}
			}
			return out
		})
	})
}

type scriptEnv struct {
	env      Env
	s        Strategy
	baseline int64 // allocator's Allocated before the strategy (paged: before its pool)
}

func bytesArg(t *testing.T, d *datadriven.TestData, key, def string) int64 {
	v := def
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	n, err := mem.ParseBytes(v)
	if err != nil {
		t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
	}
	return n
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	v := def
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

func (e *scriptEnv) handle(t *testing.T, d *datadriven.TestData) string {
	f := mem.FormatBytesExact
	errOut := func(err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	}
	switch d.Cmd {
	case "init":
		var specStr, allocStr string
		d.ScanArgs(t, "strategy", &specStr)
		d.ScanArgs(t, "alloc", &allocStr)
		e.env = newEnv(t, allocStr, bytesArg(t, d, "device", "1GiB"), bytesArg(t, d, "pool", "0"))
		e.baseline = e.env.Alloc.Stats().Allocated
		s, err := Parse(specStr, e.env)
		if err != nil {
			e.s = nil
			return errOut(err)
		}
		e.s = s
		return s.Name()
	case "admit":
		r := Request{Prompt: intArg(t, d, "prompt", 0), MaxOutput: intArg(t, d, "max-output", 0),
			TrueOutput: intArg(t, d, "true-output", 0), N: intArg(t, d, "n", 1)}
		if d.HasArg("prefix") {
			// prefix=(1,2,3) span=32: prefix ids of 32-token spans.
			var ids []string
			d.ScanArgs(t, "prefix", &ids)
			for _, x := range ids {
				v, err := strconv.ParseUint(x, 10, 64)
				if err != nil {
					t.Fatalf("%s: prefix id %q: %v", d.Pos, x, err)
				}
				r.PrefixIDs = append(r.PrefixIDs, v)
			}
			r.PrefixSpan = intArg(t, d, "span", 0)
		}
		id := SeqID(intArg(t, d, "seq", 0))
		out := errOut(e.s.Admit(id, r))
		if pc, ok := e.s.(PrefixCaching); ok && r.PrefixIDs != nil && out == "ok" {
			out += fmt.Sprintf(" prefix-hit=%d", pc.PrefixHit(id))
		}
		return out
	case "grow":
		return errOut(e.s.Grow(SeqID(intArg(t, d, "seq", 0)), intArg(t, d, "tokens", 0)))
	case "release":
		return errOut(e.s.Release(SeqID(intArg(t, d, "seq", 0))))
	case "preempt":
		return errOut(e.s.Preempt(SeqID(intArg(t, d, "seq", 0))))
	case "close":
		return errOut(e.s.Close())
	case "usage":
		u := e.s.Usage()
		var sb strings.Builder
		fmt.Fprintf(&sb, "%v\n", u)
		fmt.Fprintf(&sb, "held=%s footprint=%s", f(u.Held()), f(u.Footprint()))
		if u.Held() > 0 {
			fmt.Fprintf(&sb, " kv-waste=%.4f", u.KVWaste())
		}
		return sb.String()
	case "stats":
		return e.s.Stats().String()
	case "alloc":
		st := e.env.Alloc.Stats()
		return fmt.Sprintf("reserved=%s allocated=%s cached-free=%s segments=%d live=%d ooms=%d",
			f(st.Reserved), f(st.Allocated), f(st.CachedFree()), st.Segments, st.LiveBlocks, st.OOMs)
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}
