//go:build unix

package whatif

import (
	"golang.org/x/sys/unix"
	"os"
	"unsafe"
)

// mapFile maps the first size bytes of f read-only.
func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) { unix.Munmap(b) }

// dropPages tells the kernel the whole pages of p, which lies inside the
// shared file mapping m, are not needed any more: they leave the
// process's resident set (the file keeps the data; a later access would
// read it back).
func dropPages(m, p []byte) {
	if len(p) == 0 || len(m) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	hi := lo + uintptr(len(p))
	if lo < base || hi > base+uintptr(len(m)) {
		return
	}
	ps := uintptr(os.Getpagesize())
	start := (lo - base + ps - 1) / ps * ps
	end := (hi - base) / ps * ps
	if end > start {
		unix.Madvise(m[start:end], unix.MADV_DONTNEED)
	}
}
