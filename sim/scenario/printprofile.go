package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// WriteProfile writes the step-time profile a run of s would use
// (`simulate --print-profile`): the one s names (LoadProfile, files through
// open), or, with none, the joint model's profile of s's GPU for its engine
// and release, as sim's WriteYAML writes it, after a comment that says
// where an embedded one comes from. With asJSON, the same document as JSON,
// keys in the same order, comments dropped, strings through
// untrusted.PrintableJSON. note says what the run itself does that the document
// does not show ("" when nothing): that it times its steps with the
// roofline. s must name a GPU.
func WriteProfile(w io.Writer, s *Scenario, open Opener, asJSON bool) (note string, err error) {
	g, err := model.LookupGPU(s.GPU)
	if err != nil {
		return "", err
	}
	engine := sim.EngineVLLMV1
	if s.Engine.Name != "" {
		if engine, err = sim.ParseEngine(s.Engine.Name); err != nil {
			return "", fmt.Errorf("%w: engine.name: %q: want one of %s", ErrBadScenario, s.Engine.Name, strings.Join(sim.EngineNames(), ", "))
		}
	}
	v, err := sim.ParseEngineVersion(engine, s.Engine.Version)
	if err != nil {
		return "", fmt.Errorf("%w: engine.version: %w", ErrBadScenario, err)
	}
	p, from, err := LoadProfile(s, g, engine, v.String(), open)
	if err != nil {
		return "", err
	}
	if p == nil {
		note = fmt.Sprintf("the run times its steps with the roofline; this is the joint model's profile of %s for %s %s", g.Name, engine, v)
		if p, err = sim.DefaultProfile(g.Name, engine, v.String()); err != nil {
			return note, err
		}
		from = ProfileFromEmbedded
	}
	var b bytes.Buffer
	if from == ProfileFromEmbedded {
		fmt.Fprintf(&b, "# The joint step-time model's profile of %s under %s %s, derived from %s\n", g.Name, engine, v, sim.JointPath)
		fmt.Fprintf(&b, "# (the GPU preset's sustained peaks: its datasheet's times its measured share of them over the H100's,\n")
		fmt.Fprintf(&b, "# sim.SustainedPeaks; the shared efficiencies; the overheads of %s).\n", sim.OverheadClass(engine, v))
	}
	if err := p.WriteYAML(&b); err != nil {
		return "", err
	}
	text := b.Bytes()
	if asJSON {
		if text, err = yamlToJSON(text); err != nil {
			return "", err
		}
		text = untrusted.PrintableJSON(text) // a profile file's strings, as the --json documents write them
	}
	_, err = w.Write(text)
	return note, err
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
		v, err := scalarValue(n)
		if err != nil {
			return err
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

// scalarValue is a scalar's value by its tag: an int, a finite float, a
// bool, nil or a string.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!int":
		var i int64
		err := n.Decode(&i)
		return i, err
	case "!!float":
		var x float64
		if err := n.Decode(&x); err != nil {
			return nil, err
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		return x, nil
	case "!!bool":
		var x bool
		err := n.Decode(&x)
		return x, err
	case "!!null":
		return nil, nil
	}
	return n.Value, nil
}
