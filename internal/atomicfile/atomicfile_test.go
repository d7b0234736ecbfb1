package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	// Nothing visible while writing.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("while writing the directory holds %d entries", len(ents))
	}
	f.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("abort changed the file to %q", b)
	}
	f, err = Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after commit the file holds %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("after commit the directory holds %d entries, want 1", len(ents))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	f.Abort() // after Commit: no effect
	if _, err := os.Stat(path); err != nil {
		t.Error("Abort after Commit removed the file")
	}
}

// A new file (nothing at the path) is linked there directly: complete,
// mode 0644, and nothing else in the directory.
func TestCommitNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("while writing the directory holds %d entries", len(ents))
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after commit the file holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("after commit the directory holds %d entries, want 1", len(ents))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}
