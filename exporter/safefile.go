package exporter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// The exporter reads files that other programs write (snapshots, their
// label sidecars) and serves files it wrote itself (captures). Every one of
// them is opened through a dirHandle: the directory is opened once, each
// file is named by one path element relative to it (openat), a symbolic
// link is never followed, nothing but a regular file is ever opened (a
// named pipe would block the opener until a writer comes; a device could
// act on open), and the file is opened non-blocking and checked again on
// the open descriptor (fstat), so a file swapped between the check and the
// open is refused too. These checks run at every open, not at start-up.

// Errors of the safe file opening.
var (
	// ErrNotRegular: the name is a symbolic link, a named pipe, a socket, a
	// device or a directory; only regular files are read or served.
	ErrNotRegular = errors.New("exporter: not a regular file")
	// ErrBadName: the name is not one plain path element.
	ErrBadName = errors.New("exporter: not a plain file name")
	// ErrFileChanged: the file changed between its check and its open.
	ErrFileChanged = errors.New("exporter: file changed while it was opened")
)

// maxNameBytes is the longest file name accepted: NAME_MAX on Linux and
// most file systems (255 bytes).
const maxNameBytes = 255

// checkName accepts one plain path element: not empty, not . or .., no
// separator, no NUL, at most maxNameBytes.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxNameBytes ||
		strings.ContainsAny(name, "/\x00") || os.PathSeparator != '/' && strings.ContainsRune(name, os.PathSeparator) {
		return fmt.Errorf("%w: %q", ErrBadName, truncateForLog(name))
	}
	return nil
}

// truncateForLog bounds a name quoted in a message to 300 bytes.
func truncateForLog(s string) string {
	const n = 300 // longer than any accepted name (maxNameBytes)
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// fileStat is what the exporter keeps of a file's metadata: its type bits,
// size, modification time and identity (device and inode; zero where the
// platform has none).
type fileStat struct {
	mode     fs.FileMode // type bits only
	size     int64
	mtimeNs  int64
	dev, ino uint64
}

// kindOf names the kind of file mode is, for messages.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	case mode.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// notRegular is the error for name of the given kind.
func notRegular(name string, mode fs.FileMode) error {
	return fmt.Errorf("%s: %w: it is %s (only regular files are opened: put the file itself here, not a link, pipe or device)",
		name, ErrNotRegular, kindOf(mode))
}

// sortEntries orders directory entries by name, as os.ReadDir does.
func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// lockState is what a probe's name lock (.STEM.lock, which gpufrag-probe
// holds with an exclusive flock for its process's life, taken before it
// writes STEM.pickle) says about the writer of STEM.pickle.
type lockState int8

const (
	// lockUnknown: no lock file (a plain _dump_snapshot writer), one that is
	// not a regular file (a link, pipe or directory: never opened or
	// followed), one that cannot be opened or locked (permissions, a file
	// system without flock), or a platform without flock.
	lockUnknown lockState = iota
	// lockHeld: a process holds the lock: the writer lives.
	lockHeld
	// lockFree: the lock file exists and no process holds it: the writer
	// is gone (or, for an instant, a new one has created the file and not
	// yet locked it: the next rescan sees it held).
	lockFree
)

func (s lockState) String() string {
	switch s {
	case lockHeld:
		return "held"
	case lockFree:
		return "free"
	}
	return "unknown"
}
