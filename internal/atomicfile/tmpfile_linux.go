package atomicfile

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func openTmpfile(dir string) (*os.File, error) {
	// Read-write: a writer may read back what it wrote (the timeline
	// writer copies its body behind a bigger head).
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
}

// linkTmpfile gives the O_TMPFILE inode a name. Going through
// /proc/self/fd needs no privilege (AT_EMPTY_PATH would).
func linkTmpfile(f *os.File, name string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
	}
	return nil
}
