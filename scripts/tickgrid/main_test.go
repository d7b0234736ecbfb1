package main

import (
	"testing"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
)

func TestGuestOf(t *testing.T) {
	for _, c := range []struct{ path, group, want string }{
		{"fixtures/kernels/guest-M-1s1c2t/hackbench.perf.data", "6.1 2-vCPU", "guest-M-1s1c2t 6.1"},
		{"fixtures/kernels/v6.12/guest-N-2s1c1t-2numa/r1/schbench.perf.data.gz", "6.12", "guest-N-2s1c1t-2numa 6.12"},
		{"../shared/fixtures/kernels/guest-B-1s4c2t/hackbench.perf.data", "6.1 shared", "guest-B-1s4c2t 6.1"},
		{"fixtures/local-6.18/schbench-m1-t2.perf.data", "6.18", "6.18"},
	} {
		if got := guestOf(scriptutil.Recording{Group: c.group, Path: c.path}); got != c.want {
			t.Errorf("guestOf(%s) = %q, want %q", c.path, got, c.want)
		}
	}
}
