package strategy

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// TestNoMemoryError: noMemory's lazily formatted error reads and unwraps
// as the fmt.Errorf it stands for.
func TestNoMemoryError(t *testing.T) {
	causes := []error{
		blockpool.ErrOutOfBlocks,
		fmt.Errorf("%w: need %d blocks, %d free", blockpool.ErrOutOfBlocks, 3, 1),
		&alloc.OOMError{Requested: 1 << 20},
	}
	for _, cause := range causes {
		got := noMemory("grow", 7, cause)
		want := fmt.Errorf("%w: %s seq %d: %w", ErrNoMemory, "grow", SeqID(7), cause)
		if got.Error() != want.Error() {
			t.Errorf("text %q, want %q", got, want)
		}
		if !errors.Is(got, ErrNoMemory) || !errors.Is(got, cause) {
			t.Errorf("%v: not ErrNoMemory and its cause", got)
		}
		var oom *alloc.OOMError
		if errors.As(got, &oom) != errors.As(want, &oom) {
			t.Errorf("%v: errors.As *alloc.OOMError differs", got)
		}
		if !reflect.DeepEqual(got.(interface{ Unwrap() []error }).Unwrap(), want.(interface{ Unwrap() []error }).Unwrap()) {
			t.Errorf("%v: chain differs", got)
		}
	}
	if got := noMemory("admit", 1, nil); got.Error() != "strategy: out of KV memory: admit seq 1" || !errors.Is(got, ErrNoMemory) {
		t.Errorf("nil cause: %v", got)
	}
}
