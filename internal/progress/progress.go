// Package progress is a small progress bar for gpufrag's commands, a thin
// wrapper over github.com/vbauerster/mpb/v8.
//
// A bar renders only when its writer is an *os.File attached to a terminal
// (checked with golang.org/x/term). For any other writer, a pipe, a file,
// a bytes.Buffer in a test or a CI log, New returns a no-op bar that starts
// no goroutine and writes nothing, so callers need no TTY check of their
// own:
//
//	bar := progress.New(os.Stderr, int64(len(events)), "replay")
//	defer bar.Done()
//	for _, ev := range events {
//		...
//		bar.Increment()
//	}
//
// NewBytes counts the bytes of an input whose size is not known, with
// their rate.
//
// All methods are safe on a nil *Bar and after Done. A Bar is safe for
// concurrent use.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Bar is one progress bar, or a no-op when its writer is not a terminal.
type Bar struct {
	p    *mpb.Progress // nil for a no-op bar
	b    *mpb.Bar
	once sync.Once
}

// New starts a bar labelled label counting up to total, drawn on w when w
// is a terminal. A total of 0 means unknown: the bar shows a count and a
// spinner instead of a percentage; a negative total, work that counts
// nothing: a spinner and the time elapsed.
func New(w io.Writer, total int64, label string) *Bar {
	if !IsTerminal(w) {
		return &Bar{}
	}
	return newBar(w, total, label, false)
}

// IsTerminal reports whether w is an *os.File attached to a terminal, that
// is, whether New would draw a bar on it.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// newBar builds a rendering bar; forceTTY makes mpb draw on a writer that
// is not a terminal (tests).
func newBar(w io.Writer, total int64, label string, forceTTY bool) *Bar {
	p := newProgress(w, forceTTY)
	name := decor.Name(label, decor.WCSyncSpaceR)
	var b *mpb.Bar
	if total > 0 {
		b = p.AddBar(total,
			mpb.PrependDecorators(name, decor.CountersNoUnit("%d / %d", decor.WCSyncSpace)),
			mpb.AppendDecorators(
				decor.Percentage(decor.WC{W: 5}),
				decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WC{W: 8}), " done"),
			),
		)
	} else if total < 0 {
		b = p.AddSpinner(0,
			mpb.PrependDecorators(name),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WC{W: 8})),
		)
	} else {
		b = p.AddSpinner(0,
			mpb.PrependDecorators(name, decor.CurrentNoUnit("%d", decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WC{W: 8})),
		)
	}
	return &Bar{p: p, b: b}
}

// NewBytes starts a bar labelled label counting the bytes read from an
// input of unknown size (standard input from a pipe), drawn on w when w is
// a terminal: a spinner, the bytes read (KiB, MiB, GiB), their average rate
// and the time elapsed, both since start, the moment the reading began. A
// caller that draws the bar only once the input proves long passes that
// moment and Adds what was read before, so that the rate counts every byte.
func NewBytes(w io.Writer, label string, start time.Time) *Bar {
	if !IsTerminal(w) {
		return &Bar{}
	}
	return newBytesBar(w, label, start, false)
}

func newBytesBar(w io.Writer, label string, start time.Time, forceTTY bool) *Bar {
	p := newProgress(w, forceTTY)
	// mpb's AverageSpeed and Elapsed stop updating once the bar completes,
	// so an input read within one refresh would end without either: these
	// are computed at every drawing, the last one included.
	rate := decor.Any(func(s decor.Statistics) string {
		return fmt.Sprintf("% .1f/s", decor.SizeB1024(float64(s.Current)/max(time.Since(start).Seconds(), 1e-3)))
	}, decor.WC{W: 12})
	elapsed := decor.Any(func(decor.Statistics) string { return time.Since(start).Round(time.Second).String() }, decor.WC{W: 8})
	b := p.AddSpinner(0,
		mpb.PrependDecorators(decor.Name(label, decor.WCSyncSpaceR), decor.Current(decor.SizeB1024(0), "% .1f", decor.WCSyncSpace)),
		mpb.AppendDecorators(rate, elapsed),
	)
	return &Bar{p: p, b: b}
}

// newProgress is the container of a rendering bar.
func newProgress(w io.Writer, forceTTY bool) *mpb.Progress {
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithWidth(72)}
	if forceTTY {
		opts = append(opts, mpb.ForceTTY(), mpb.WithAutoRefresh())
	}
	return mpb.New(opts...)
}

// Enabled reports whether the bar draws anything.
func (b *Bar) Enabled() bool { return b != nil && b.p != nil }

// Increment adds one to the count.
func (b *Bar) Increment() {
	if b.Enabled() {
		b.b.Increment()
	}
}

// Add adds n to the count.
func (b *Bar) Add(n int64) {
	if b.Enabled() {
		b.b.IncrInt64(n)
	}
}

// SetCurrent sets the count to n; negative values are ignored.
func (b *Bar) SetCurrent(n int64) {
	if b.Enabled() {
		b.b.SetCurrent(n)
	}
}

// Done completes the bar at its current count (so a loop that ended early
// or an unknown total still finishes cleanly), draws it one last time and
// waits for rendering to stop. Calls after the first do nothing.
func (b *Bar) Done() {
	if !b.Enabled() {
		return
	}
	b.once.Do(func() {
		b.b.SetTotal(-1, true)
		b.p.Wait()
	})
}
