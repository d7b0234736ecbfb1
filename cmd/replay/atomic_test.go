package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/schedreplay/replay/timeline"
)

// An ingest killed at any moment (SIGKILL: no chance to clean up) leaves
// either nothing or the complete timeline in its output directory, never a
// partial or temporary file.
func TestKilledIngestLeavesNothing(t *testing.T) {
	in := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data")
	testKilled(t, func(out string) []string { return []string{"ingest", "--progress=never", in, "-o", out} })
}

// Likewise a what-if replay writing its simulated timeline.
func TestKilledWhatifLeavesNothing(t *testing.T) {
	in := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data")
	testKilled(t, func(out string) []string { return []string{"whatif", "-i", in, "-o", out} })
}

func testKilled(t *testing.T, args func(out string) []string) {
	if testing.Short() {
		t.Skip("kills processes at many moments")
	}
	killed, finished := 0, 0
	for i := 0; i < 12; i++ {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.arrow")
		cmd := exec.Command(replayBin, args(out)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i*i) * 2 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err != nil {
			killed++
		} else {
			finished++
		}
		ents, _ := os.ReadDir(dir)
		switch {
		case len(ents) == 0:
		case len(ents) == 1 && ents[0].Name() == "out.arrow":
			r, err := timeline.Open(out)
			if err != nil {
				t.Fatalf("after kill at %d: output exists but does not open: %v", i, err)
			}
			n := 0
			for r.Next() {
				n++
			}
			if r.Err() != nil || int64(n) != r.Meta().Summary.Events {
				t.Errorf("after kill at %d: output holds %d of %d events (%v)", i, n, r.Meta().Summary.Events, r.Err())
			}
			r.Close()
		default:
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("after kill at %d the directory holds %q", i, names)
		}
	}
	if killed == 0 {
		t.Error("no run was killed before it finished: the test proves nothing")
	}
	t.Logf("%d runs killed, %d finished first", killed, finished)
}
