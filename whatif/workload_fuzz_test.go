package whatif

import (
	"path/filepath"
	"testing"

	"github.com/schedreplay/replay/internal/fuzzio"
)

// A workload file from anywhere: LoadWorkload gives a valid workload or an
// error, never a panic, and a workload it accepts replays with its
// invariants held.
func FuzzLoadWorkload(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, "tiny.arrow")
	if err := SaveWorkload(p, tinyWorkload()); err != nil {
		f.Fatal(err)
	}
	fuzzio.AddFile(f, p)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := fuzzio.WriteTemp(t, "w.arrow", data)
		IsWorkloadFile(p)
		w, err := LoadWorkload(p)
		if err != nil {
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("loaded an invalid workload: %v", err)
		}
		pol, _ := LookupPolicy("v6.1")
		cfg := DefaultConfig(pol)
		cfg.MaxEvents = 1 << 20
		if w.Topology == nil {
			return
		}
		if _, err := Replay(w, cfg, checkerFor(t, cfg, w)); err != nil {
			t.Fatalf("replay of a loaded workload: %v", err)
		}
	})
}
