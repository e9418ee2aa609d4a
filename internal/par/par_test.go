package par

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Results come back by index whatever the number of workers, and no more
// than Workers jobs run at once.
func TestMapOrderAndBound(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 64} {
		var running, peak, done atomic.Int64
		got, err := Map(context.Background(), 100, Options{Workers: workers, OnDone: func() { done.Add(1) }},
			func(_ context.Context, i int) (int, error) {
				r := running.Add(1)
				for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
				}
				defer running.Add(-1)
				return i * i, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != i*i {
				t.Fatalf("workers %d: result %d = %d", workers, i, v)
			}
		}
		if workers > 0 && peak.Load() > int64(workers) {
			t.Errorf("workers %d: %d jobs ran at once", workers, peak.Load())
		}
		if done.Load() != 100 {
			t.Errorf("workers %d: OnDone called %d times, want 100", workers, done.Load())
		}
	}
}

// Errors are joined in index order, so the message does not depend on which
// job failed first in time; the other jobs still run.
func TestMapErrors(t *testing.T) {
	var ran atomic.Int64
	_, err := Map(context.Background(), 10, Options{Workers: 4}, func(_ context.Context, i int) (int, error) {
		ran.Add(1)
		if i%3 == 0 {
			return 0, fmt.Errorf("job %d", i)
		}
		return i, nil
	})
	if err == nil || err.Error() != "job 0\njob 3\njob 6\njob 9" {
		t.Errorf("error %q, want the failed jobs in index order", err)
	}
	if ran.Load() != 10 {
		t.Errorf("%d jobs ran, want all 10", ran.Load())
	}
}

// A cancelled context starts no more jobs and says so.
func TestMapCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int64
	_, err := Map(ctx, 1000, Options{Workers: 1}, func(_ context.Context, i int) (int, error) {
		if ran.Add(1) == 5 {
			cancel()
		}
		return i, nil
	})
	if !errors.Is(err, context.Canceled) || ran.Load() != 5 {
		t.Errorf("ran %d jobs, error %v; want 5 and context.Canceled", ran.Load(), err)
	}
	if _, err := Map(ctx, 0, Options{}, func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("no jobs on a cancelled context: %v", err)
	}
}

// A panic reaches the caller, naming the job, after the others finished.
func TestMapPanic(t *testing.T) {
	var ran atomic.Int64
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "job 7 panicked: boom") {
			t.Errorf("recovered %v", r)
		}
	}()
	_ = Do(context.Background(), 20, Options{Workers: 1}, func(_ context.Context, i int) error {
		ran.Add(1)
		if i == 7 {
			panic("boom")
		}
		return nil
	})
	t.Error("Do returned after a panic")
}

func ExampleMap() {
	squares, err := Map(context.Background(), 5, Options{Workers: 2}, func(_ context.Context, i int) (int, error) {
		return i * i, nil
	})
	fmt.Println(squares, err, slices.IsSorted(squares))
	// Output: [0 1 4 9 16] <nil> true
}
