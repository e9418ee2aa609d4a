package optrace

import "fmt"

// Validate checks that the ids of a trace make sense in order: every free
// names a live id, no alloc reuses an id that is still live, and every op is
// well formed. name labels error messages as in Read. Read already validates;
// Validate is for traces built in code.
func Validate(ops []Op, name string) error {
	var t tracker
	for i, op := range ops {
		if field, msg := op.check(); field != "" {
			return &Error{Name: name, Line: lineOf(op, i), Field: field, Msg: msg, Err: ErrField}
		}
		if err := t.apply(op, i); err != nil {
			err.Name = name
			return err
		}
	}
	return nil
}

// lineOf is the line an error about ops[i] names: the line it was read from,
// or its 1-based position for ops built in code.
func lineOf(op Op, i int) int {
	if op.Line > 0 {
		return op.Line
	}
	return i + 1
}

// idState is what a trace has done with an id so far.
type idState uint8

const (
	idLive  idState = iota + 1 // allocated and not yet freed
	idFreed                    // freed; may be allocated again
)

// idEntry is the tracker's record of one id.
type idEntry struct {
	state idState
	line  int // where it was last allocated (live) or freed (freed)
}

// tracker follows the ids of a trace to catch unknown ids, double frees and
// reuse of live ids. Freed ids are remembered so a double free can say where
// the first free was.
type tracker struct {
	ids map[string]idEntry
}

// apply records ops[i] (op) and returns an error without Name if the op is
// not allowed at this point of the trace.
func (t *tracker) apply(op Op, i int) *Error {
	if op.Kind != Alloc && op.Kind != Free {
		return nil
	}
	if t.ids == nil {
		t.ids = make(map[string]idEntry)
	}
	line := lineOf(op, i)
	e, seen := t.ids[op.ID]
	if op.Kind == Alloc {
		if seen && e.state == idLive {
			return &Error{Line: line, Field: "id", Err: ErrLiveID,
				Msg: fmt.Sprintf("alloc of id %q, which is still live (allocated at line %d and not freed since)", clipString(op.ID), e.line)}
		}
		t.ids[op.ID] = idEntry{idLive, line}
		return nil
	}
	switch {
	case !seen:
		return &Error{Line: line, Field: "id", Err: ErrUnknownID,
			Msg: fmt.Sprintf("free of unknown id %q (no earlier line allocates it)", clipString(op.ID))}
	case e.state == idFreed:
		return &Error{Line: line, Field: "id", Err: ErrDoubleFree,
			Msg: fmt.Sprintf("double free of id %q (already freed at line %d)", clipString(op.ID), e.line)}
	}
	t.ids[op.ID] = idEntry{idFreed, line}
	return nil
}
