//go:build unix

package perfdata

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

func readAllMapped(t *testing.T, path string) ([]timeline.Event, error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return timeline.ReadAll(r)
}

// A mapped file gives exactly the rows a read one does, on every committed
// perf.data fixture.
func TestMappedEqualsRead(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot(), "fixtures", "perf", "*.data"))
	more, _ := filepath.Glob(filepath.Join(repoRoot(), "fixtures", "kernels", "*", "*.perf.data"))
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found only %d fixtures", len(files))
	}
	defer func(v int64) { mapMinSize = v }(mapMinSize)
	defer func(v int) { dropEvery = v }(dropEvery)
	for _, f := range files {
		mapMinSize = 1 << 62
		want, werr := readAllMapped(t, f)
		mapMinSize = 0
		// Pages released as usual, then every other page: queued records
		// that refer to released pages read them back from the file.
		for _, every := range []int{8 << 20, 4096} {
			dropEvery = every
			got, gerr := readAllMapped(t, f)
			if (werr == nil) != (gerr == nil) || len(got) != len(want) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s (release every %d): mapped read %d rows (err %v), buffered %d (err %v)", f, every, len(got), gerr, len(want), werr)
			}
		}
	}
}

// A file truncated while it is being read through the mapping gives an
// error, not a crash (SIGBUS).
func TestMappedFileShrinks(t *testing.T) {
	src := filepath.Join(repoRoot(), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.data")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(v int64) { mapMinSize = v }(mapMinSize)
	mapMinSize = 0
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.mapped == nil {
		t.Fatal("file not mapped")
	}
	if !r.Next() {
		t.Fatalf("no first row: %v", r.Err())
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		n++
	}
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "shrank") {
		t.Fatalf("after truncation: %d more rows, err %v; want the shrank error", n, r.Err())
	}
}
