package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
)

// TestScripts runs the commented engine scenarios in testdata/scripts.
// Rerun with -rewrite to regenerate their output, and keep the diff only if
// you understand why it changed.
//
// Commands:
//
//	config [model=tiny|PRESET] [gpu=toy|PRESET] [capacity=64MiB] [kv=paged:16] [alloc=caching]
//	       [on-oom=default] [max-seqs=256] [max-batch-tokens=8192] [chunked=true]
//	       [activations=true] [util=0.9] [context=0] [max-context=0] [max-tokens=0]
//	       [duration=0s] [overhead=3ms] [tp=1]
//	    start a new run: DefaultConfig with these changes, and no requests.
//	    model=tiny is tinyModel (8 KiB of KV per token, 2 MiB of weights,
//	    2048-token context); gpu=toy is a GPU of the given capacity with
//	    1 TB/s and 1 PFLOP/s; capacity= overrides a preset's too. context is
//	    the CUDA context (0 here, unlike DefaultConfig's 500 MiB).
//	request id=r1 [at=0s] prompt=P [output=O] [n=1] [count=1] [every=0s]
//	    add a request (count > 1: ids r1.0, r1.1, ... every `every` apart).
//	run [events=8] [reqs=8]
//	    run the engine and print the result's counters, the first events and
//	    each request's end state; then close the engine.
//
// After every run the harness checks the accounting (checkAccounting) and
// that Close leaves nothing allocated (checkClose).
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		var s scriptEnv
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.handle(t, d)
		})
	})
}

type scriptEnv struct {
	cfg  Config
	reqs []workload.Request
}

func scanStr(t *testing.T, d *datadriven.TestData, key, def string) string {
	v := def
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

func scanInt(t *testing.T, d *datadriven.TestData, key string, def int) int {
	v := def
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

func scanBool(t *testing.T, d *datadriven.TestData, key string, def bool) bool {
	v := def
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

func scanBytes(t *testing.T, d *datadriven.TestData, key, def string) int64 {
	v := scanStr(t, d, key, def)
	n, err := mem.ParseBytes(v)
	if err != nil {
		t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
	}
	return n
}

func scanDur(t *testing.T, d *datadriven.TestData, key, def string) int64 {
	v := scanStr(t, d, key, def)
	x, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %s=%s: %v", d.Pos, key, v, err)
	}
	return int64(x)
}

func (s *scriptEnv) handle(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "config":
		return s.config(t, d)
	case "request":
		id := scanStr(t, d, "id", fmt.Sprintf("r%d", len(s.reqs)+1))
		at := scanDur(t, d, "at", "0s")
		every := scanDur(t, d, "every", "0s")
		count := scanInt(t, d, "count", 1)
		for i := range count {
			r := workload.Request{ID: id, Arrival: at + int64(i)*every, PromptTokens: scanInt(t, d, "prompt", 0),
				OutputTokens: scanInt(t, d, "output", 0), N: scanInt(t, d, "n", 1)}
			if count > 1 {
				r.ID = fmt.Sprintf("%s.%d", id, i)
			}
			s.reqs = append(s.reqs, r)
		}
		return ""
	case "run":
		return s.run(t, d)
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (s *scriptEnv) config(t *testing.T, d *datadriven.TestData) string {
	var m model.Model
	switch name := scanStr(t, d, "model", "tiny"); name {
	case "tiny":
		m = tinyModel()
	default:
		var err error
		if m, err = model.Preset(name); err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
	}
	var g model.GPU
	switch name := scanStr(t, d, "gpu", "toy"); name {
	case "toy":
		g = toyGPU(scanBytes(t, d, "capacity", "64MiB"))
	default:
		var err error
		if g, err = model.LookupGPU(name); err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		if d.HasArg("capacity") {
			g.Capacity = scanBytes(t, d, "capacity", "")
		}
	}
	c := DefaultConfig(m, g)
	c.ContextBytes = scanBytes(t, d, "context", "0")
	if err := c.KV.UnmarshalText([]byte(scanStr(t, d, "kv", c.KV.String()))); err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	if err := c.Alloc.UnmarshalText([]byte(scanStr(t, d, "alloc", c.Alloc.String()))); err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	oom, err := ParseOnOOM(scanStr(t, d, "on-oom", "default"))
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	c.OnOOM = oom
	c.MaxSeqs = scanInt(t, d, "max-seqs", c.MaxSeqs)
	c.MaxBatchTokens = scanInt(t, d, "max-batch-tokens", c.MaxBatchTokens)
	c.ChunkedPrefill = scanBool(t, d, "chunked", c.ChunkedPrefill)
	c.Activations = scanBool(t, d, "activations", c.Activations)
	d.MaybeScanArgs(t, "util", &c.GPUMemoryUtilization)
	c.MaxContext = scanInt(t, d, "max-context", 0)
	c.MaxTokens = scanInt(t, d, "max-tokens", 0)
	c.Duration = scanDur(t, d, "duration", "0s")
	c.Roofline.StepOverhead = scanDur(t, d, "overhead", "3ms")
	c.TP = scanInt(t, d, "tp", 1)
	s.cfg, s.reqs = c, nil
	return ""
}

// dur renders virtual seconds as a duration rounded to the nanosecond.
func dur(sec float64) time.Duration { return time.Duration(math.Round(sec * 1e9)) }

var phaseNames = [...]string{"pending", "waiting", "running", "done", "failed", "rejected"}

func (s *scriptEnv) run(t *testing.T, d *datadriven.TestData) string {
	e, err := New(s.cfg, s.reqs)
	if err != nil {
		return "error: " + err.Error()
	}
	res, err := e.Run()
	if err != nil {
		return "error: " + err.Error()
	}
	if err := checkAccounting(e, res); err != nil {
		t.Fatalf("%s: accounting: %v", d.Pos, err)
	}
	f := mem.FormatBytesExact
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s, on-oom %s: kv budget %s", res.KV, res.Allocator, res.OnOOM, f(res.KVBudgetBytes))
	if res.KVPoolBytes > 0 {
		fmt.Fprintf(&b, ", pool %s", f(res.KVPoolBytes))
	}
	fmt.Fprintf(&b, "\nrequests %d: completed %d, failed %d, rejected %d, unfinished %d, truncated %d\n",
		res.RequestsTotal, res.RequestsCompleted, res.RequestsFailedOOM, res.RequestsRejected, res.RequestsUnfinished, res.OutputsTruncated)
	fmt.Fprintf(&b, "steps %d, output tokens %d, preemptions %d, activation ooms %d, batch mean %.2f\n",
		res.Steps, res.OutputTokens, res.Preemptions, res.ActivationOOMs, res.BatchSizeMean)
	fmt.Fprintf(&b, "peak reserved %s, peak allocated %s, kv copied %s\n",
		f(res.PeakReservedBytes), f(res.PeakAllocatedBytes), f(res.KVCopiedBytes))
	fmt.Fprintf(&b, "simulated %v, ttft p50 %v, tpot p50 %v, e2e p50 %v\n",
		dur(res.SimulatedSeconds), dur(res.TTFT.P50), dur(res.TPOT.P50), dur(res.E2E.P50))
	maxEv := scanInt(t, d, "events", 8)
	for i, ev := range res.Events {
		if i == maxEv {
			fmt.Fprintf(&b, "... %d more events\n", len(res.Events)-maxEv)
			break
		}
		fmt.Fprintf(&b, "event %v %s %s\n", dur(ev.Time), ev.Kind, ev.Request)
	}
	maxReqs := scanInt(t, d, "reqs", 8)
	for i := range e.reqs {
		r := &e.reqs[i]
		if i == maxReqs {
			fmt.Fprintf(&b, "... %d more requests\n", len(e.reqs)-maxReqs)
			break
		}
		fmt.Fprintf(&b, "%s %s gen %d/%d", r.id, phaseNames[r.ph], r.gen, r.output)
		switch {
		case r.ph == phaseDone && r.first < 0:
			fmt.Fprintf(&b, " no first token, end %v", time.Duration(r.finish))
		case r.ph == phaseDone:
			fmt.Fprintf(&b, " first %v end %v", time.Duration(r.first), time.Duration(r.finish))
		}
		b.WriteByte('\n')
	}
	if err := checkClose(e); err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	return b.String()
}
