package cli

import (
	"io/fs"
	"os"
	"path/filepath"

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
// the reader's error, else err Analyze's. On a terminal
// stderr, for a regular file of at least progressMinBytes, it draws the
// bytes read as a bar and then the analysis (replay and what-ifs) as a
// counter of elapsed time; in a pipe or a file it draws nothing.
func readAnalyze(cmd *cobra.Command, path string, readOpts *snapshot.Options, opts analysis.Options) (rep *analysis.Report, name string, readErr, err error) {
	stderr := cmd.ErrOrStderr()
	var st os.FileInfo
	if path != "-" && progress.IsTerminal(stderr) {
		st, _ = os.Stat(path)
	}
	if st == nil || !st.Mode().IsRegular() || st.Size() < progressMinBytes {
		snap, name, err := snapshot.ReadFile(path, cmd.InOrStdin(), readOpts)
		if err != nil {
			return nil, name, err, nil
		}
		rep, err := analysis.Analyze(snap, opts)
		return rep, name, nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, path, err, nil
	}
	defer file.Close()
	bar := progress.New(stderr, st.Size(), "read "+progressLabel(path))
	snap, err := snapshot.ReadOptions(&countingReader{f: file, bar: bar}, path, readOpts)
	bar.Done()
	if err != nil {
		return nil, path, err, nil
	}
	spin := progress.New(stderr, -1, "analyze "+progressLabel(path))
	rep, err = analysis.Analyze(snap, opts)
	spin.Done()
	return rep, path, nil, err
}

// progressLabel is a file's name as a bar shows it: its base name,
// control characters escaped, at most 32 characters with its end kept.
func progressLabel(path string) string {
	return human.ClipName(untrusted.Printable(filepath.Base(path)), 32)
}

// countingReader advances bar by the bytes each Read of f returns. Its
// Stat is f's: the reader takes a regular file's size from it
// (pickle.ReaderSize), to check declared lengths against the input's end.
type countingReader struct {
	f   *os.File
	bar *progress.Bar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.bar.Add(int64(n))
	return n, err
}

func (c *countingReader) Stat() (fs.FileInfo, error) { return c.f.Stat() }
