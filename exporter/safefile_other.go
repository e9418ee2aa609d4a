//go:build !unix

package exporter

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dirHandle is the directory's path where there is no openat(2): each file
// is checked with Lstat before it is opened and again on the open file
// (os.SameFile), so links and non-regular files are still refused, with a
// window between the two checks that the unix version does not have.
type dirHandle struct{ path string }

func openDirHandle(path string) (*dirHandle, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	return &dirHandle{path: path}, nil
}

func (d *dirHandle) close() error { return nil }

func (d *dirHandle) list() ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	sortEntries(entries)
	return entries, nil
}

func statOfInfo(info fs.FileInfo) fileStat {
	return fileStat{mode: info.Mode().Type(), size: info.Size(), mtimeNs: info.ModTime().UnixNano()}
}

func (d *dirHandle) lstat(name string) (fileStat, error) {
	if err := checkName(name); err != nil {
		return fileStat{}, err
	}
	info, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return fileStat{}, err
	}
	return statOfInfo(info), nil
}

func (d *dirHandle) open(name string) (*os.File, fileStat, error) {
	if err := checkName(name); err != nil {
		return nil, fileStat{}, err
	}
	path := filepath.Join(d.path, name)
	before, err := os.Lstat(path)
	if err != nil {
		return nil, fileStat{}, err
	}
	if !before.Mode().IsRegular() {
		return nil, fileStat{}, notRegular(path, before.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStat{}, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fileStat{}, err
	}
	if !info.Mode().IsRegular() || !os.SameFile(before, info) {
		_ = f.Close()
		return nil, fileStat{}, fmt.Errorf("%s: %w", path, ErrFileChanged)
	}
	return f, statOfInfo(info), nil
}

func (d *dirHandle) createTemp(prefix string) (*os.File, string, error) {
	for range 16 { // a collision of 26 random base-32 characters is never expected
		name := prefix + rand.Text() + ".tmp"
		f, err := os.OpenFile(filepath.Join(d.path, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, name, nil
	}
	return nil, "", fmt.Errorf("%s: cannot create a temporary file: names taken", d.path)
}

func (d *dirHandle) rename(oldName, newName string) error {
	if err := checkName(newName); err != nil {
		return err
	}
	return os.Rename(filepath.Join(d.path, oldName), filepath.Join(d.path, newName))
}

func (d *dirHandle) remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return os.Remove(filepath.Join(d.path, name))
}

func (d *dirHandle) sync() error { return nil } // directories cannot be synced here

// testLock: there is no flock(2) here, and the probe takes no name lock
// (probe/gpufrag_probe/_files.py): whether a writer lives is unknown.
func (d *dirHandle) testLock(string) lockState { return lockUnknown }
