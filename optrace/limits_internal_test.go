package optrace

import (
	"errors"
	"strings"
	"testing"
)

// TestLimits: more than MaxOps ops, and input past MaxInputBytes (blank
// lines included), are ErrTooLarge errors naming the line and the limit.
// The limits are lowered here; the real ones need gigabytes to reach.
func TestLimits(t *testing.T) {
	oldOps, oldLim := opLimit, lineLimits
	defer func() { opLimit, lineLimits = oldOps, oldLim }()
	opLimit, lineLimits.Total = 3, 1000

	_, err := Read(strings.NewReader(strings.Repeat(`{"op":"sync"}`+"\n", 5)), "s")
	if want := "s: line 4: more than 3 ops (optrace.MaxOps); split the trace"; !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("ops:\n got  %v\n want %s", err, want)
	}
	_, err = Read(strings.NewReader(`{"op":"sync"}`+strings.Repeat("\n", 2000)), "b")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Msg != "the input goes on past 1000 bytes (optrace.MaxInputBytes)" {
		t.Errorf("blank lines: %v", err)
	}
}
