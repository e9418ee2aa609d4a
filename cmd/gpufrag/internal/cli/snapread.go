package cli

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/spf13/cobra"
)

// progressMinBytes is the smallest snapshot file whose reading and
// analysis draw progress bars: below it both take well under a second
// (about 0.3 s for 16 MB) and a bar would only leave lines behind.
const progressMinBytes = 16 << 20

// readAnalyze reads the snapshot at path (- for standard input) and
// analyses it, as snapshot.ReadFile and analysis.Analyze do: readErr is
// the reader's error, else err Analyze's. On a terminal stderr, for an
// input of at least progressMinBytes, it draws the bytes read as a bar
// and then the analysis (replay and what-ifs) as a counter of elapsed
// time: a regular file's bar has its size as its total; standard input
// from a pipe, whose size is unknown, gets a count of the bytes read and
// their rate once progressMinBytes were read. In a pipe or a file it draws
// nothing.
func readAnalyze(cmd *cobra.Command, path string, readOpts *snapshot.Options, opts analysis.Options) (rep *analysis.Report, name string, readErr, err error) {
	stderr := cmd.ErrOrStderr()
	in, name, size := progressInput(cmd, path)
	if in == nil {
		snap, name, err := snapshot.ReadFile(path, cmd.InOrStdin(), readOpts)
		if err != nil {
			return nil, name, err, nil
		}
		rep, err := analysis.Analyze(snap, opts)
		return rep, name, nil, err
	}
	if path != "-" {
		defer in.Close()
	}
	label := progressLabel(name)
	r := &countingReader{f: in, w: stderr, label: "read " + label, start: time.Now()}
	if size >= 0 {
		r.bar = progress.New(stderr, size, r.label)
	}
	snap, err := snapshot.ReadOptions(r, name, readOpts)
	r.bar.Done()
	if err != nil {
		return nil, name, err, nil
	}
	if r.bar == nil { // standard input shorter than progressMinBytes
		rep, err = analysis.Analyze(snap, opts)
		return rep, name, nil, err
	}
	spin := progress.New(stderr, -1, "analyze "+label)
	rep, err = analysis.Analyze(snap, opts)
	spin.Done()
	return rep, name, nil, err
}

// progressInput returns the input of readAnalyze to read with progress
// bars, the name its messages use and its size (-1: unknown), or a nil
// file when none is drawn: stderr is not a terminal, path is not a
// regular file of at least progressMinBytes, or standard input is not a
// file (a test's reader). Standard input redirected from a regular file
// has that file's size.
func progressInput(cmd *cobra.Command, path string) (*os.File, string, int64) {
	if !progress.IsTerminal(cmd.ErrOrStderr()) {
		return nil, "", 0
	}
	if path == "-" {
		f, ok := cmd.InOrStdin().(*os.File)
		if !ok || f == nil {
			return nil, "", 0
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return f, "stdin", -1
		}
		if st.Size() < progressMinBytes {
			return nil, "", 0
		}
		return f, "stdin", st.Size()
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() < progressMinBytes {
		return nil, "", 0
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", 0 // ReadFile names the error
	}
	return f, path, st.Size()
}

// progressLabel is a file's name as a bar shows it: its base name,
// control characters escaped, at most 32 characters with its end kept.
func progressLabel(path string) string {
	return human.ClipName(untrusted.Printable(filepath.Base(path)), 32)
}

// countingReader advances bar by the bytes each Read of f returns. Its
// Stat is f's: the reader takes a regular file's size from it
// (pickle.ReaderSize), to check declared lengths against the input's end.
// Without a bar (an input of unknown size), it starts one on w, a count
// of bytes labelled label, once progressMinBytes were read since start.
type countingReader struct {
	f     *os.File
	bar   *progress.Bar
	w     io.Writer
	label string
	start time.Time
	n     int64 // the bytes read
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	if c.bar == nil && c.n >= progressMinBytes {
		c.bar = progress.NewBytes(c.w, c.label, c.start)
		c.bar.Add(c.n)
	} else {
		c.bar.Add(int64(n))
	}
	return n, err
}

func (c *countingReader) Stat() (fs.FileInfo, error) { return c.f.Stat() }
