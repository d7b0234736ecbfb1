// Package atomicfile writes an output file so that it appears complete or
// not at all: a failed, interrupted or killed run leaves neither a partial
// file at the path nor a temporary file beside it.
//
// On Linux the data goes to an unnamed O_TMPFILE inode in the target
// directory, which the kernel discards if the process dies; Commit links it
// at the path (or, to replace a file there, under a temporary name renamed
// over the path at once: only a kill between those two calls leaves that
// name behind). Elsewhere (or
// where the filesystem lacks O_TMPFILE) it falls back to a named temporary
// file that Abort removes: then only SIGKILL can leave a temp file behind.
//
// A path that names something other than a regular file (a device such as
// /dev/null or /dev/stdout, a named pipe) is written in place: replacing
// it would put a regular file where the device or pipe was.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// File is an output file being written.
type File struct {
	*os.File
	path   string
	named  bool // fallback: os.File has a visible temporary name
	direct bool // path is a device or pipe, written in place
	done   bool
}

// Create starts writing path.
func Create(path string) (*File, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, fmt.Errorf("%s: is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, path: path, direct: true}, nil
	}
	dir := filepath.Dir(path)
	if f, err := openTmpfile(dir); err == nil {
		return &File{File: f, path: path}, nil
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path, named: true}, nil
}

// Commit closes the file and puts it at its path, replacing what was there.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.path)
	}
	f.done = true
	if f.direct {
		return f.File.Close()
	}
	if err := f.File.Chmod(0o644); err != nil {
		f.abort()
		return err
	}
	if f.named {
		if err := f.File.Close(); err != nil {
			os.Remove(f.File.Name())
			return err
		}
		if err := os.Rename(f.File.Name(), f.path); err != nil {
			os.Remove(f.File.Name())
			return err
		}
		return nil
	}
	// Link the unnamed inode at the path itself when nothing is there: one
	// system call, so a kill leaves the file complete or absent.
	if err := linkTmpfile(f.File, f.path); !os.IsExist(err) {
		closeErr := f.File.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		return closeErr
	}
	// Something is there, and linkat refuses to replace it: link under a
	// fresh temporary name and rename that into place at once (the name
	// exists only between the two calls), closing afterwards.
	tmp := ""
	var err error
	for i := 0; i < 100; i++ {
		tmp = filepath.Join(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(i))
		if err = linkTmpfile(f.File, tmp); !os.IsExist(err) {
			break
		}
	}
	if err != nil {
		f.File.Close()
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// Abort discards the file; the path is untouched (a device or pipe has
// had what was written to it). Safe after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.abort()
}

func (f *File) abort() {
	f.File.Close()
	if f.named {
		os.Remove(f.File.Name())
	}
}
