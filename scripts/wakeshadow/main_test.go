package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/whatif"
)

// Guest-P's committed hackbench: the kernel keeps more of the wakees the
// formula would pull (margins above 0) than it pulls — 70 against 33 when
// measured, r2 1,010 against 22 (FIDELITY.md round 89: wake_wide decided
// them; the engine, scored the same way on its own output, pulls nearly
// all of those, whatif's TestWakeShadowAgreesWithTheEngine). The table
// prints it.
func TestKernelKeepsWhereTheFormulaPulls(t *testing.T) {
	const path = "../../fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data"
	opt := whatif.WakeShadowOptions{ImbalancePct: 117, LLCSize: 2}
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := whatif.WakeShadow(r, opt)
	if err != nil {
		t.Fatal(err)
	}
	kept, pulled := 0, 0
	for _, b := range res.Bands {
		if b.Low >= 0 {
			kept += b.Kept
			pulled += b.Pulled
		}
	}
	if kept <= pulled || pulled == 0 {
		t.Errorf("above a 0 margin the kernel kept %d and pulled %d; want more kept than pulled, some pulled", kept, pulled)
	}
	var b strings.Builder
	if err := run(&b, path, opt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "wakeups scored") || !strings.Contains(b.String(), "+30 % and above") {
		t.Errorf("table:\n%s", b.String())
	}
}

// The start the kernel's choices fit: on guest-P's second hackbench boot
// 698 wakeups are telling (the formula pulls by 10 % or more); a start
// at 0 calls 15 of them as the kernel chose, every start from 2 689–694
// (wake_wide from the flips the workload inherited; FIDELITY.md rounds
// 89 and 90). -fit prints the sweep, one line a start.
func TestFitStartFlips(t *testing.T) {
	const path = "../../fixtures/kernels/repeats/guest-P-1s2c1t/r2/hackbench.perf.data.gz"
	var b strings.Builder
	if err := fitFlips(&b, path, whatif.WakeShadowOptions{ImbalancePct: 117, LLCSize: 2}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 12 || !strings.Contains(lines[0], ": 698 telling") {
		t.Fatalf("-fit printed:\n%s", b.String())
	}
	for i, start := range whatif.FlipCandidates() {
		var n uint32
		var called int
		if _, err := fmt.Sscan(lines[i+1], &n, &called); err != nil || n != start {
			t.Fatalf("line %q: %v", lines[i+1], err)
		}
		if ok := start == 0 && called < 70 || start >= 2 && called*100 >= 698*98; !ok && start != 1 {
			t.Errorf("from %d flips %d of 698 called right; want under 10 %% from 0, at least 98 %% from 2 on", start, called)
		}
	}
}

// -list prints every scored wakeup, one a line: on guest-M's 6.1
// same-day schbench (r2) the waking at 8.077495 s that whatif's
// TestWakeShadowListsWidePulls works by hand (worker 419 with 7 flips
// wakes message thread 417 with 14 from CPU 0; wide, and pulled all the
// same), and the table's header counts such pulls.
func TestListWakeups(t *testing.T) {
	const path = "../../fixtures/kernels/crosskernel/v6.1/guest-M-1s1c2t/r2/schbench.perf.data.gz"
	opt := whatif.WakeShadowOptions{ImbalancePct: 110, LLCSize: 2}
	var b strings.Builder
	if err := listWakeups(&b, path, opt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n8.077495 0 1 419 417 7 14 wide ") || !strings.Contains(b.String(), " wide +0.050 pulled\n") {
		t.Errorf("-list printed:\n%s", b.String())
	}
	b.Reset()
	if err := run(&b, path, opt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "of them pulled all the same") {
		t.Errorf("table:\n%s", b.String())
	}
}
