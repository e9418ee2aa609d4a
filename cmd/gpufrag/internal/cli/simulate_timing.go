package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// The flags of `gpufrag simulate` that choose how time is modelled: the
// engine's step composition, the step-time profile, the weights' type and
// the client's cap on requests in flight.

func addTimingFlags(fl *pflag.FlagSet, f *simulateFlags) {
	fl.StringVar(&f.profile, "profile", "", "time steps with `MODEL|FILE`: roofline, joint (the joint model's profile of --gpu, --engine and --engine-version; "+
		"--gpu's own name says the same), or a profile YAML file, as gpufrag calibrate writes (default: "+sim.DefaultStepTime+")")
	fl.BoolVar(&f.printProfile, "print-profile", false, "print the YAML of the step-time profile the run would use (with none given, --gpu's embedded one for --engine) and exit; with --json, as JSON")
	fl.IntVar(&f.maxConcurrency, "max-concurrency", 0, "a closed-loop client: at most `N` requests in flight, the rest wait and their latencies start when sent "+
		"(default: a vllm-bench trace's own max_concurrency, else none; 0 lifts it)")
	fl.BoolVar(&f.warmPrompts, "warm-prompts", false, "start with every request's prompt in the prefix cache, as a benchmark repeated against one server finds them "+
		"(vllm bench serve and SGLang's bench_serving send the same prompts on every run of one seed; with prefix caching on, runs after the first are served from the cache)")
	fl.IntVar(&f.run, "run", 0, "the run `N` (from 1) of a vllm-bench file that holds several (an SGLang JSONL sweep, vLLM --append-result)")
}

// applyTimingFlags writes the timing flags that were set into s. It runs
// after applySimulateFlags (which has put --trace's workload in place and
// checked that --run comes with it).
func applyTimingFlags(cmd *cobra.Command, f *simulateFlags, s *scenario.Scenario) error {
	set := cmd.Flags().Changed
	if set("profile") {
		names := append([]string{scenario.ProfileRoofline, scenario.ProfileJoint}, sim.ProfileGPUs()...)
		if f.profile == "" {
			return usageErrorf(cmd, "--profile: empty; give roofline, joint, a GPU's name (%s) or a profile file", strings.Join(sim.ProfileGPUs(), ", "))
		}
		if !scenario.IsProfileFile(f.profile) && !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, f.profile) }) {
			return usageErrorf(cmd, "--profile %q: not roofline, joint or a GPU's name (%s); a file's name needs a dot or a slash (./%s.yaml)%s",
				f.profile, strings.Join(sim.ProfileGPUs(), ", "), f.profile, didYouMean(f.profile, names))
		}
		if scenario.IsProfileFile(f.profile) {
			if err := checkInputs(fileFlag{"--profile", f.profile}); err != nil {
				return err
			}
		}
		s.Profile = f.profile
		s.Dir = "" // a flag's file is relative to the working directory
	}
	if set("max-concurrency") {
		if f.maxConcurrency < 0 {
			return usageErrorf(cmd, "--max-concurrency %d: want 0 (no cap) or a positive number of requests in flight", f.maxConcurrency)
		}
		mc := f.maxConcurrency
		s.Workload.MaxConcurrency = &mc
	}
	if set("warm-prompts") {
		if f.warmPrompts && set("prefix-caching") && !f.prefixCaching {
			return usageErrorf(cmd, "--warm-prompts puts the prompts in the prefix cache: it needs prefix caching, which --prefix-caching=false turns off")
		}
		s.Workload.WarmPrompts = f.warmPrompts
	}
	if set("run") && f.run < 1 {
		return usageErrorf(cmd, "--run %d: want a run number from 1", f.run)
	}
	return nil
}

// printProfile writes the step-time profile a run of s would use: the one
// s names, or, with none, the joint model's profile of s's GPU for its
// engine and release (and says on stderr when the run itself uses the
// roofline), as sim's WriteYAML writes it, after a comment that says where
// it comes from. With asJSON, the same document as JSON, keys in the same
// order.
func printProfile(stdout, stderr io.Writer, s *scenario.Scenario, asJSON bool) error {
	if s.GPU == "" {
		return fmt.Errorf("--print-profile: no GPU: give --gpu (one of %s)", strings.Join(model.GPUNames(), ", "))
	}
	g, err := model.LookupGPU(s.GPU)
	if err != nil {
		return err
	}
	engine := sim.EngineVLLMV1
	if s.Engine.Name != "" {
		if engine, err = sim.ParseEngine(s.Engine.Name); err != nil {
			return fmt.Errorf("%w: engine.name: %q: want one of %s", scenario.ErrBadScenario, s.Engine.Name, strings.Join(sim.EngineNames(), ", "))
		}
	}
	v, err := sim.ParseEngineVersion(engine, s.Engine.Version)
	if err != nil {
		return fmt.Errorf("%w: engine.version: %w", scenario.ErrBadScenario, err)
	}
	p, from, err := scenario.LoadProfile(s, g, engine, v.String(), openNamed)
	if err != nil {
		return err
	}
	if p == nil {
		fmt.Fprintf(stderr, "gpufrag: note: the run times its steps with the roofline; this is the joint model's profile of %s for %s %s\n",
			g.Name, engine, v)
		if p, err = sim.DefaultProfile(g.Name, engine, v.String()); err != nil {
			return err
		}
		from = scenario.ProfileFromEmbedded
	}
	var b bytes.Buffer
	if from == scenario.ProfileFromEmbedded {
		fmt.Fprintf(&b, "# The joint step-time model's profile of %s under %s %s, derived from %s\n", g.Name, engine, v, sim.JointPath)
		fmt.Fprintf(&b, "# (the GPU preset's datasheet peaks, the shared efficiencies, the overheads of %s).\n", sim.OverheadClass(engine, v))
	}
	if err := p.WriteYAML(&b); err != nil {
		return err
	}
	text := b.Bytes()
	if asJSON {
		if text, err = yamlToJSON(text); err != nil {
			return err
		}
		text = loc.PrintableJSON(text) // a profile file's strings, as writeJSON writes them
	}
	_, err = stdout.Write(text)
	return err
}

// yamlToJSON converts one YAML document of mappings, sequences and plain
// scalars to indented JSON with the keys in the document's order (a Go map
// would sort them), comments dropped.
func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("profile as JSON: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("profile as JSON: want one YAML document")
	}
	var b bytes.Buffer
	if err := writeNodeJSON(&b, doc.Content[0]); err != nil {
		return nil, fmt.Errorf("profile as JSON: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("profile as JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeNodeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.AliasNode:
		return writeNodeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeNodeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeNodeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		var v any
		switch n.ShortTag() {
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return err
			}
			v = i
		case "!!float":
			var x float64
			if err := n.Decode(&x); err != nil {
				return err
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
			}
			v = x
		case "!!bool":
			var x bool
			if err := n.Decode(&x); err != nil {
				return err
			}
			v = x
		case "!!null":
			v = nil
		default:
			v = n.Value
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(out)
		return nil
	}
	return fmt.Errorf("line %d: unexpected YAML node", n.Line)
}
