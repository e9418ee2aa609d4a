//go:build unix

package exporter

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirHandle is a directory opened once; its files are opened relative to
// it with openat(2), never following a symbolic link.
type dirHandle struct {
	path string
	f    *os.File // keeps fd open; closed by close
	fd   int
}

// retryEINTR runs op until it does not fail with EINTR.
func retryEINTR(op func() error) error {
	for {
		if err := op(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// openDirHandle opens the directory path (which may itself be a symbolic
// link: it is configuration, not input).
func openDirHandle(path string) (*dirHandle, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &dirHandle{path: path, f: os.NewFile(uintptr(fd), path), fd: fd}, nil
}

func (d *dirHandle) close() error { return d.f.Close() }

// list returns the directory's entries in name order (fs.DirEntry types
// come from the directory itself: a link is reported as a link).
func (d *dirHandle) list() ([]fs.DirEntry, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	entries, err := d.f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sortEntries(entries)
	return entries, nil
}

func statOf(st *unix.Stat_t) fileStat {
	var mode fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode = fs.ModeDir
	case unix.S_IFLNK:
		mode = fs.ModeSymlink
	case unix.S_IFIFO:
		mode = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode = fs.ModeSocket
	case unix.S_IFCHR:
		mode = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode = fs.ModeDevice
	default:
		mode = fs.ModeIrregular
	}
	mt := st.Mtim
	return fileStat{mode: mode, size: st.Size, mtimeNs: mt.Nano(),
		dev: uint64(st.Dev), ino: uint64(st.Ino)}
}

// lstat returns name's metadata without following a link and without
// opening it. A missing file is an error that is fs.ErrNotExist.
func (d *dirHandle) lstat(name string) (fileStat, error) {
	if err := checkName(name); err != nil {
		return fileStat{}, err
	}
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return fileStat{}, &fs.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return statOf(&st), nil
}

// open opens the regular file name for reading: refused without being
// opened when it is anything else, opened with O_NOFOLLOW|O_NONBLOCK, and
// refused after all when the descriptor is not the regular file just
// checked (ErrFileChanged). The returned file is in blocking mode.
func (d *dirHandle) open(name string) (*os.File, fileStat, error) {
	before, err := d.lstat(name)
	if err != nil {
		return nil, fileStat{}, err
	}
	path := filepath.Join(d.path, name)
	if !before.mode.IsRegular() {
		return nil, fileStat{}, notRegular(path, before.mode)
	}
	var fd int
	err = retryEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		return err
	})
	if errors.Is(err, unix.ELOOP) { // became a link since the check
		return nil, fileStat{}, notRegular(path, fs.ModeSymlink)
	}
	if err != nil {
		return nil, fileStat{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		_ = unix.Close(fd)
		return nil, fileStat{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	got := statOf(&st)
	switch {
	case !got.mode.IsRegular():
		_ = unix.Close(fd)
		return nil, fileStat{}, notRegular(path, got.mode)
	case got.dev != before.dev || got.ino != before.ino:
		_ = unix.Close(fd)
		return nil, fileStat{}, fmt.Errorf("%s: %w", path, ErrFileChanged)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, fileStat{}, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), got, nil
}

// createTemp creates a new file prefix+random+".tmp" for writing (O_EXCL,
// O_NOFOLLOW: it never opens something already there) and returns it with
// its name.
func (d *dirHandle) createTemp(prefix string) (*os.File, string, error) {
	for range 16 { // a collision of 26 random base-32 characters is never expected
		name := prefix + rand.Text() + ".tmp"
		var fd int
		err := retryEINTR(func() (err error) {
			fd, err = unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			return err
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: filepath.Join(d.path, name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), name, nil
	}
	return nil, "", fmt.Errorf("%s: cannot create a temporary file: names taken", d.path)
}

// rename renames oldName to newName inside the directory.
func (d *dirHandle) rename(oldName, newName string) error {
	if err := checkName(newName); err != nil {
		return err
	}
	return retryEINTR(func() error { return unix.Renameat(d.fd, oldName, d.fd, newName) })
}

// remove removes name (a file, never a directory).
func (d *dirHandle) remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := retryEINTR(func() error { return unix.Unlinkat(d.fd, name, 0) })
	if err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// sync flushes the directory (after a rename).
func (d *dirHandle) sync() error { return d.f.Sync() }

// testLock tests the lock file name without waiting for it: opened as
// open opens a file (never created, never through a link, only a regular
// file, non-blocking), then a shared flock(2) tried with LOCK_NB and let
// go at once by closing the descriptor. A lock held exclusively by
// another process is lockHeld; a lock taken is lockFree (no process held
// it); anything else (no such file, not a regular file, an open or flock
// error) is lockUnknown.
//
// flock locks belong to the open file description, so this descriptor's
// shared lock conflicts with an exclusive one held through any other
// descriptor, this process's included; and while it is held (a few
// microseconds) a probe's LOCK_EX|LOCK_NB fails, which the probe retries
// before it takes another name (probe/gpufrag_probe/_files.py).
func (d *dirHandle) testLock(name string) lockState {
	f, _, err := d.open(name)
	if err != nil {
		return lockUnknown
	}
	defer f.Close() // releases the shared lock if it was taken
	err = retryEINTR(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) })
	switch {
	case err == nil:
		return lockFree
	case errors.Is(err, unix.EWOULDBLOCK):
		return lockHeld
	}
	return lockUnknown
}
