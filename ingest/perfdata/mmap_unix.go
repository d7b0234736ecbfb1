//go:build unix

package perfdata

import (
	"os"
	"syscall"
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
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	syscall.Madvise(b, syscall.MADV_SEQUENTIAL)
	return b
}

func unmapFile(b []byte) { syscall.Munmap(b) }

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
		syscall.Madvise(b[start-lo:end-lo], syscall.MADV_DONTNEED)
	}
}

// mapMinSize is the smallest file that is mapped rather than read (a
// variable so tests can send every fixture down both paths).
var mapMinSize int64 = 1 << 20
