// Package fuzzio holds what the fuzz targets of file readers share: a seed
// read from a file the package under test wrote, and each fuzz input
// written to a file for the reader to open.
package fuzzio

import (
	"os"
	"path/filepath"
	"testing"
)

// AddFile adds the bytes of the file at path as a seed.
func AddFile(f *testing.F, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// WriteTemp writes data to a file named name in a fresh temporary
// directory and returns its path.
func WriteTemp(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
