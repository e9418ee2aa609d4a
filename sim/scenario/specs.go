// Specs in YAML documents: a run's KV strategy and allocator, parsed once
// as the document is read. See scenario.go for the overview.

package scenario

import (
	"encoding"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// KVSpec is a KV strategy spec in a YAML document (a scenario's run, an
// experiment's): a strategy.Spec parsed as the document is read, a bad one
// an error naming its line and field. It writes back as its canonical text
// (strategy.Spec.MarshalText); the zero value is no strategy.
type KVSpec struct{ strategy.Spec }

// UnmarshalYAML parses the spec (strategy.ParseSpec).
func (k *KVSpec) UnmarshalYAML(n *yaml.Node) error { return unmarshalSpec(n, "kv", &k.Spec) }

// AllocSpec is an allocator spec in a YAML document: an alloc/registry.Spec
// parsed as the document is read, a bad one an error naming its line and
// field. It writes back as written; the zero value is no allocator.
type AllocSpec struct{ registry.Spec }

// UnmarshalYAML parses the spec (alloc/registry.Parse).
func (a *AllocSpec) UnmarshalYAML(n *yaml.Node) error { return unmarshalSpec(n, "alloc", &a.Spec) }

// unmarshalSpec decodes n as a string and parses it into dst; an empty
// string leaves dst zero (Build says the run needs both specs).
func unmarshalSpec(n *yaml.Node, field string, dst encoding.TextUnmarshaler) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	if s == "" {
		return nil
	}
	if err := dst.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("line %d: field %q: %w", n.Line, field, err)
	}
	return nil
}
