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
// All methods are safe on a nil *Bar and after Done. A Bar is safe for
// concurrent use.
package progress

import (
	"io"
	"os"
	"sync"

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
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithWidth(72)}
	if forceTTY {
		opts = append(opts, mpb.ForceTTY(), mpb.WithAutoRefresh())
	}
	p := mpb.New(opts...)
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
