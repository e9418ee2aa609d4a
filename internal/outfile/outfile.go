// Package outfile writes the files a command is asked to write (--html,
// --out, --output, --png, -o and the like) so that a file already there is
// replaced whole or not at all.
//
// A regular file, or a name that does not exist yet, is written to a
// temporary file in the same directory, which is renamed over the name
// once complete: a reader (a browser reloading a report, Prometheus
// reloading its rules, a script polling a profile) never sees half a file,
// and a write that fails (a full disk, an error while rendering) leaves the
// old file as it was. A symbolic link is followed to the file it names, so
// the link stays a link. Anything else (a device such as /dev/null or
// /dev/stdout, a named pipe) is opened and written in place, as a rename
// would replace the device node itself.
//
// A file the user may write in a directory they may not is written in
// place. Replacing a file by a rename gives the name a new file: other hard
// links to the old one keep the old content.
//
// A process killed between the temporary file's creation and its rename
// (SIGKILL, or a SIGINT the command does not catch) leaves the temporary
// file behind: a dot-file named after the target (".report.html.RANDOM").
package outfile

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes path with what write writes. A new file gets mode perm
// less the umask, as os.Create gives it; a regular file already at path
// keeps its mode. Errors of write are prefixed with path.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return writeMode(path, perm, false, write)
}

// WritePerm is Write, but the file gets mode perm exactly, whatever the
// umask and the mode of a file it replaces (a rules file that another
// user's Prometheus must read).
func WritePerm(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return writeMode(path, perm, true, write)
}

func writeMode(path string, perm fs.FileMode, force bool, write func(io.Writer) error) error {
	target, mode, exists, inPlace, err := resolve(path, perm)
	if err != nil {
		return err
	}
	chmod := exists || force // a new file's mode is perm less the umask, as os.Create makes it
	if force {
		mode = perm
	}
	if inPlace {
		return writeInPlace(path, target, perm, write)
	}
	tmp, err := createTemp(target, perm)
	if errors.Is(err, fs.ErrPermission) && exists {
		// A file the user may write in a directory they may not (no
		// temporary file beside it): written in place, not refused.
		return writeInPlace(path, target, perm, write)
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing to remove after the rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return named(path, err)
	}
	if chmod {
		if err := tmp.Chmod(mode); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// writeInPlace opens target (path, a link followed) for writing,
// truncated, and writes it.
func writeInPlace(path, target string, perm fs.FileMode, write func(io.Writer) error) error {
	fh, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return named(path, err)
	}
	return fh.Close()
}

// createTemp creates a new file beside target, named after it
// (".NAME.RANDOM"), with mode perm as the umask narrows it (os.CreateTemp
// would make it 0600).
func createTemp(target string, perm fs.FileMode) (*os.File, error) {
	prefix := filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".")
	for range 16 { // a collision of 26 random base-32 characters is never expected
		f, err := os.OpenFile(prefix+rand.Text(), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: cannot create a temporary file beside it: names taken", target)
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// resolve is the file to write for path (a symbolic link followed), the
// mode it should have, whether a regular file is there already, and
// whether to write it in place (not a regular file, and not absent).
func resolve(path string, perm fs.FileMode) (target string, mode fs.FileMode, exists, inPlace bool, err error) {
	fi, err := os.Stat(path) // follows links
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Absent, or a dangling link: created through the name, as
		// os.Create would.
		if lfi, lerr := os.Lstat(path); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			return path, perm, false, true, nil
		}
		return path, perm, false, false, nil
	case err != nil:
		return "", 0, false, false, err
	case fi.IsDir():
		return "", 0, false, false, &fs.PathError{Op: "open", Path: path, Err: errors.New("is a directory")}
	case !fi.Mode().IsRegular():
		return path, perm, false, true, nil
	}
	target, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", 0, false, false, err
	}
	return target, fi.Mode().Perm(), true, false, nil
}

// named prefixes an error of the writing with path.
func named(path string, err error) error {
	return fmt.Errorf("%s: %w", path, err)
}
