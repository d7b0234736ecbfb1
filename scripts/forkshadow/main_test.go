package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// The tally by hand: a fork placed where the kernel put it, one kept on
// the forking CPU by both, one the kernel sent away and the model to
// another CPU, one the kernel kept and the model sent away.
func TestTally(t *testing.T) {
	ps := []whatif.ForkPlacement{
		{CPU: 0, Kernel: 1, Model: 1},
		{CPU: 0, Kernel: 0, Model: 0},
		{CPU: 0, Kernel: 2, Model: 3},
		{CPU: 0, Kernel: 0, Model: 1},
	}
	if got, want := tally(ps), (Tally{Forks: 4, Same: 2, Side: 3, KernelLocal: 2}); got != want {
		t.Errorf("tally %+v, want %+v", got, want)
	}
}

// On the committed guest-M hackbench (80 forks, 16 kept on the forking
// CPU by the kernel: perf script's sched_wakeup_new records) the model's
// rules on the shadow's loads place every fork as the kernel did; -v
// lists them.
func TestRunFixture(t *testing.T) {
	var b bytes.Buffer
	if err := run(&b, "../../fixtures/kernels/guest-M-1s1c2t/hackbench.perf.data", "", true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"80 forks; the model placed 80 on the kernel's CPU, and kept 80 on the forking CPU or sent them away as the kernel did (the kernel kept 16)",
		"child ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "differs") {
		t.Errorf("a fork marked as differing:\n%s", out)
	}
	if err := run(&b, "../../fixtures/kernels/nonexistent.perf.data", "", false); err == nil {
		t.Error("a missing file: no error")
	}
}
