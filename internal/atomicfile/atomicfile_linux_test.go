package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe at the path is written in place, not replaced by a regular
// file (the same holds for a device such as /dev/null, which a test must
// not risk replacing).
func TestCommitIntoPipe(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Opened read-write, a FIFO does not wait for a writer (Linux), and
	// the writer's open does not wait either.
	r, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const msg = "through the pipe"
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(msg))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after commit %s is %v (err %v), want the named pipe", path, st.Mode(), err)
	}
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != msg {
		t.Errorf("the pipe's reader got %q (err %v), want %q", buf, err, msg)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("after commit the directory holds %d entries, want 1", len(ents))
	}
}

func TestCreateDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create(a directory): error %v, want one saying it is a directory", err)
	}
}
