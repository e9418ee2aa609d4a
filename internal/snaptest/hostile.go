package snaptest

// Hostile is a name a snapshot from somebody else may hold in a frame's
// filename or name, a segment_type or any other string: an OSC that
// retitles a terminal, one that clears it, a NUL, a newline, a carriage
// return, DEL, a C1 CSI, a line separator, a right-to-left override and
// markup. Every renderer must print it escaped (untrusted.Printable), never raw.
// It is valid UTF-8, as every string of a pickle is.
const Hostile = "evil\x1b]0;pwned\x07\x1b[2J\x00\nnl\r\x7f\u009b31m\u2028\u202eRTL<b>&amp;"

// WithStrings returns a copy of v (a Dict, list or *Shared tree such as
// FromSpec builds) in which every frame's filename and name (an
// annotation's name too) are frame and every segment's segment_type is
// segmentType, for tests of what a renderer does with names from the file.
// A value shared through the memo stays shared.
func WithStrings(v any, frame, segmentType string) any {
	w := renamer{frame: frame, segmentType: segmentType, shared: map[*Shared]*Shared{}}
	return w.walk(v)
}

type renamer struct {
	frame, segmentType string
	shared             map[*Shared]*Shared
}

func (w renamer) walk(v any) any {
	switch t := v.(type) {
	case Dict:
		out := make(Dict, len(t))
		for i, kv := range t {
			out[i] = KV{kv[0], w.walk(kv[1])}
			if _, ok := kv[1].(string); ok {
				switch kv[0] {
				case "filename", "name":
					out[i][1] = w.frame
				case "segment_type":
					out[i][1] = w.segmentType
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = w.walk(t[i])
		}
		return out
	case Tuple:
		out := make(Tuple, len(t))
		for i := range t {
			out[i] = w.walk(t[i])
		}
		return out
	case *Shared:
		if s, ok := w.shared[t]; ok {
			return s
		}
		s := &Shared{V: w.walk(t.V)}
		w.shared[t] = s
		return s
	}
	return v
}
