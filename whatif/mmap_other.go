//go:build !unix

package whatif

import (
	"io"
	"os"
)

// mapFile reads the first size bytes of f (no mmap here: the column is
// held in memory while it is written).
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b)
	return b, err
}

func unmapFile([]byte) {}

func dropPages(m, p []byte) {}
