// Package arrowtest holds test helpers for the Arrow IPC files the tool
// writes.
package arrowtest

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// OpenFile opens the Arrow IPC file at path for reading, failing t if it
// cannot; the reader and the file are closed when the test ends.
func OpenFile(t testing.TB, path string) *ipc.FileReader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fr.Close() })
	return fr
}
