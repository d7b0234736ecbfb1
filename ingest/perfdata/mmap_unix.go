//go:build unix

package perfdata

import (
	"golang.org/x/sys/unix"
	"os"
	"unsafe"
)

// mapFile maps f read-only, or returns nil when it cannot (not a regular
// file, empty, or mmap refused): the caller then reads it.
func mapFile(f *os.File, size int64) []byte {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return b
}

func unmapFile(b []byte) { unix.Munmap(b) }

// dropPages tells the kernel the process is done with b's whole pages, so
// a long trace's mapping does not accumulate in the resident set; the file
// keeps the data, and a later access would read it back.
func dropPages(b []byte) {
	if len(b) == 0 {
		return
	}
	ps := uintptr(os.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (lo + ps - 1) / ps * ps
	end := (lo + uintptr(len(b))) / ps * ps
	if end > start {
		unix.Madvise(b[start-lo:end-lo], unix.MADV_DONTNEED)
	}
}

// mapMinSize is the smallest file that is mapped rather than read (a
// variable so tests can send every fixture down both paths).
var mapMinSize int64 = 1 << 20
