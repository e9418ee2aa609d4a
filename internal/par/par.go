// Package par runs independent jobs on a bounded number of goroutines and
// returns their results in input order, so that a sweep's output does not
// depend on how many workers ran it. It is the one worker pool of the
// command-line sweeps (simulate's runs, cluster policies × seeds, the
// experiment suite, advise's candidates, analyze's what-if replays).
//
// Each job must be independent of the others (its own engine, allocator or
// RNG) and deterministic; par adds no ordering of its own beyond the index.
package par

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Options tunes Map. The zero value runs GOMAXPROCS workers.
type Options struct {
	// Workers bounds the jobs running at once (<= 0: runtime.GOMAXPROCS).
	Workers int
	// OnDone, when set, is called after each job, from the job's goroutine
	// (a progress bar's Increment).
	OnDone func()
}

// Map calls fn(ctx, i) for every i in [0, n), at most Options.Workers at
// once, and returns the results by index. Its error joins the jobs' errors
// in index order (nil when none failed); the results of failed jobs are
// their zero values or whatever fn returned with the error. Once ctx is
// done no new job starts, and ctx's error is joined after the jobs'. A
// panic in fn is re-raised in the caller's goroutine, after the running
// jobs have finished, with the index of the job that panicked.
func Map[T any](ctx context.Context, n int, o Options, fn func(ctx context.Context, i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	if n == 0 {
		return out, ctx.Err()
	}
	errs := make([]error, n)
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		next     int
		panicked any
		panicAt  = -1
	)
	// take hands out the next index, or -1 when there is none or ctx is done.
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || ctx.Err() != nil || panicAt >= 0 {
			return -1
		}
		next++
		return next - 1
	}
	run := func(i int) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if panicAt < 0 || i < panicAt {
					panicked, panicAt = r, i
				}
				mu.Unlock()
			}
		}()
		out[i], errs[i] = fn(ctx, i)
		if o.OnDone != nil {
			o.OnDone()
		}
	}
	for range workers {
		wg.Go(func() {
			for i := take(); i >= 0; i = take() {
				run(i)
			}
		})
	}
	wg.Wait()
	if panicAt >= 0 {
		panic(fmt.Sprintf("par: job %d panicked: %v", panicAt, panicked))
	}
	return out, errors.Join(append(errs, ctx.Err())...)
}

// Do is Map for jobs that return only an error.
func Do(ctx context.Context, n int, o Options, fn func(ctx context.Context, i int) error) error {
	_, err := Map(ctx, n, o, func(ctx context.Context, i int) (struct{}, error) { return struct{}{}, fn(ctx, i) })
	return err
}
