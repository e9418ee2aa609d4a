package untrusted

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxYAMLNodes bounds the nodes a YAML document gpufrag reads may decode
// into, aliases expanded (16,384). Scenarios, experiments and step-time
// profiles are written by people: the largest shipped one (an experiment)
// has 233 nodes, and a scenario of 64 runs about 500.
// Without a bound, the size of the work followed what the document asked
// for, not its size: a 600 KB scenario of one anchor and 150,000 aliases
// decoded into 150,000 runs (170 s, 1.1 GB), aliases of aliases grow
// exponentially (yaml.v3's own guard allows 400,000 expanded nodes, about
// 100 MB), and a 1 MiB list of 500,000 numbers took 3 s and 250 MB to
// decode.
const MaxYAMLNodes = 1 << 14

// YAMLError is a YAML document that CheckYAML refused: the line at fault
// and what is wrong.
type YAMLError struct {
	Line int
	Msg  string
}

func (e *YAMLError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// CheckYAML parses data, one YAML document (callers bound its size), into
// nodes, which keep every alias as one node, and refuses it before
// anything decodes it when it would decode into more than MaxYAMLNodes
// nodes, each alias counted at the nodes it expands to (a decoder expands
// an alias again wherever it is used), or when an alias is inside the node
// it names. It returns the document's root for callers that want lines and
// keys; io.EOF for an empty input; a *YAMLError "more than one YAML
// document"; yaml's own error for a document that does not parse.
func CheckYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root, extra yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &YAMLError{Line: extra.Line, Msg: "more than one YAML document"}
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("more than one YAML document: %w", err)
	}
	c := nodeCounter{size: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	if err := c.walk(&root); err != nil {
		return nil, err
	}
	return &root, nil
}

// nodeCounter counts the nodes a document decodes into: one for each node
// as written, and for each alias the nodes of what it names. Only anchored
// nodes can be reached through an alias, so only their sizes are
// remembered: a document without anchors costs one walk and no map.
type nodeCounter struct {
	size  map[*yaml.Node]int  // expanded size of an anchored node, at most MaxYAMLNodes+1
	open  map[*yaml.Node]bool // anchored nodes being sized: an alias to one is inside it
	total int                 // nodes so far, at most MaxYAMLNodes+1
}

// walk visits the document as written, in order, so that the error names
// the line where the count crosses the bound.
func (c *nodeCounter) walk(n *yaml.Node) error {
	add := 1
	if n.Kind == yaml.AliasNode {
		var err error
		if add, err = c.sizeOf(n); err != nil {
			return err
		}
	}
	if c.total = min(c.total+add, MaxYAMLNodes+1); c.total > MaxYAMLNodes {
		msg := fmt.Sprintf("more than %d values and keys (untrusted.MaxYAMLNodes) in a document written by hand", MaxYAMLNodes)
		if n.Kind == yaml.AliasNode {
			msg = fmt.Sprintf("the aliases up to *%s expand the document to more than %d values and keys (untrusted.MaxYAMLNodes): an alias is decoded again wherever it is used",
				Clip(n.Value), MaxYAMLNodes)
		}
		return &YAMLError{Line: n.Line, Msg: msg}
	}
	for _, k := range n.Content {
		if err := c.walk(k); err != nil {
			return err
		}
	}
	return nil
}

// sizeOf returns the nodes n expands to, through its aliases (saturating
// above MaxYAMLNodes, so sizes never overflow).
func (c *nodeCounter) sizeOf(n *yaml.Node) (int, error) {
	if n == nil {
		return 0, nil
	}
	if n.Kind == yaml.AliasNode {
		if c.open[n.Alias] {
			return 0, &YAMLError{Line: n.Line, Msg: fmt.Sprintf("the alias *%s is inside the node it names, which would expand without end", Clip(n.Value))}
		}
		return c.sizeOf(n.Alias)
	}
	if s, ok := c.size[n]; ok {
		return s, nil
	}
	if n.Anchor != "" {
		c.open[n] = true
	}
	s := 1
	for _, k := range n.Content {
		t, err := c.sizeOf(k)
		if err != nil {
			return 0, err
		}
		s = min(s+t, MaxYAMLNodes+1)
	}
	if n.Anchor != "" {
		delete(c.open, n)
		c.size[n] = s
	}
	return s, nil
}

var (
	yamlLineRE     = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlNotFoundRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	yamlQuotedRE   = regexp.MustCompile("`([^`]*)`")
	yamlGoTypeRE   = regexp.MustCompile(` into [a-z][a-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*$`)
)

// YAMLDecodeError rewrites an error of yaml.v3's Decode of the document
// whose nodes are root (CheckYAML's) as gpufrag's other readers word
// theirs, without the "yaml: " prefix and the Go type names of the
// structs it decodes into: "line 2: field "engine.max_seq": unknown
// field", "line 1: field "model": want text, got a list";
// several errors are joined with "; ". errors.As still finds the
// *yaml.TypeError.
func YAMLDecodeError(err error, root *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &yamlDecodeError{strings.TrimPrefix(err.Error(), "yaml: "), err}
	}
	keys := yamlKeysByLine(root)
	msgs := make([]string, 0, len(te.Errors))
	for _, m := range te.Errors {
		sm := yamlLineRE.FindStringSubmatch(m)
		if sm == nil {
			msgs = append(msgs, m)
			continue
		}
		n, _ := strconv.Atoi(sm[1])
		msg := sm[2]
		if fm := yamlNotFoundRE.FindStringSubmatch(msg); fm != nil {
			msg = "unknown field"
			for _, c := range keys[n] {
				if c.key == fm[1] {
					keys[n] = []yamlKeyAt{c}
					break
				}
			}
		} else if yamlGoTypeRE.MatchString(msg) {
			msg = yamlGoTypeRE.ReplaceAllString(msg, " into a mapping of fields")
		}
		quoted := yamlQuotedRE.FindStringSubmatch(msg)
		msg = yamlTypeWords(msg)
		ks := keys[n]
		if len(ks) == 0 {
			msgs = append(msgs, fmt.Sprintf("line %d: %s", n, msg))
			continue
		}
		k := ks[0].path
		// Several keys on one line (a flow mapping): the one whose value
		// the message quotes.
		if q := quoted; q != nil {
			for _, c := range ks {
				if c.value == q[1] {
					k = c.path
					break
				}
			}
		}
		msgs = append(msgs, fmt.Sprintf("line %d: field %q: %s", n, k, msg))
	}
	return &yamlDecodeError{strings.Join(msgs, "; "), err}
}

var yamlUnmarshalRE = regexp.MustCompile("^cannot unmarshal !!([a-z]+)(?: `([^`]*)`)? into (.+)$")

// yamlTypeWords words yaml.v3's "cannot unmarshal !!str `two` into int"
// as "want an integer, got text "two"": no YAML tags, no Go types. Other
// messages are returned as they are.
func yamlTypeWords(msg string) string {
	m := yamlUnmarshalRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	var want string
	switch into := m[3]; {
	case into == "a mapping of fields", strings.HasPrefix(into, "map["):
		want = "a mapping of fields"
	case strings.HasPrefix(into, "[]"):
		want = "a list"
	case strings.HasPrefix(into, "int"), strings.HasPrefix(into, "uint"):
		want = "an integer"
	case strings.HasPrefix(into, "float"):
		want = "a number"
	case into == "bool":
		want = "true or false"
	case into == "string":
		want = "text"
	default:
		return msg
	}
	got := map[string]string{"str": "text", "int": "an integer", "float": "a number", "bool": "true or false",
		"seq": "a list", "map": "a mapping", "null": "null", "timestamp": "a timestamp", "binary": "binary data"}[m[1]]
	if got == "" {
		got = "a !!" + m[1]
	}
	if m[2] != "" {
		got += " " + Quote(m[2])
	}
	return "want " + want + ", got " + got
}

// yamlDecodeError is YAMLDecodeError's result: its message, yaml's error
// underneath.
type yamlDecodeError struct {
	msg string
	err error
}

func (e *yamlDecodeError) Error() string { return e.msg }
func (e *yamlDecodeError) Unwrap() error { return e.err }

type yamlKeyAt struct{ key, path, value string }

// yamlKeysByLine maps each line to the mapping keys on it, with their
// paths ("engine.max_seqs", "runs[1].kv") and scalar values.
func yamlKeysByLine(root *yaml.Node) map[int][]yamlKeyAt {
	out := map[int][]yamlKeyAt{}
	if root == nil {
		return out
	}
	var walk func(n *yaml.Node, p string)
	walk = func(n *yaml.Node, p string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, p)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kp := k.Value
				if p != "" {
					kp = p + "." + k.Value
				}
				val := ""
				if v.Kind == yaml.ScalarNode {
					val = v.Value
				}
				out[k.Line] = append(out[k.Line], yamlKeyAt{k.Value, kp, val})
				walk(v, kp)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	walk(root, "")
	return out
}
