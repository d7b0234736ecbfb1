// Command forkshadow checks the model's fork balancing against a kernel's
// own placements. It reads a kernel trace with the PELT shadow
// (whatif.ForkShadow: loads redone from the trace's switches, wakeups and
// updates) and, at each fork the trace shows placed (sched_wakeup_new),
// runs the model's find_idlest_cpu on the shadow's run queues: the engine's
// own code on the kernel's state. It prints how many forks the model
// placed where the kernel did, and how many it kept on the forking CPU or
// sent elsewhere as the kernel did; where those agree, a replay that forks
// a task elsewhere got there by a different state, not a different rule
// (FIDELITY.md round 97).
//
//	go run ./scripts/forkshadow fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data
//	go run ./scripts/forkshadow -v fixtures/kernels/repeats/guest-D-1s8c1t/r2/stressng-mix.perf.data.gz
//
// -v lists the forks; -policy scores them under another policy than the
// one matching the trace's kernel. Kernel traces only: a replay's forks
// are the model's by construction.
package main

import (
	"fmt"
	"io"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

func main() {
	var all Tally
	traces := 0
	scriptutil.ShadowMain("forkshadow", "forks", func(w io.Writer, path, policy string, verbose bool) error {
		t, err := score(w, path, policy, verbose)
		all.add(t)
		traces++
		return err
	})
	if traces > 1 {
		fmt.Printf("all %d traces: %d forks; the model placed %d on the kernel's CPU, and kept %d on the forking CPU or sent them away as the kernel did (the kernel kept %d)\n",
			traces, all.Forks, all.Same, all.Side, all.KernelLocal)
	}
}

// Tally counts a trace's forks by agreement.
type Tally struct {
	Forks int
	// Same: the model chose the kernel's CPU. Side: it kept the child on
	// the forking CPU, or sent it to another, as the kernel did (the
	// other CPU may differ: find_idlest_group's tie among idle CPUs goes
	// to the lowest util, which the shadow knows less well).
	Same, Side int
	// KernelLocal: the kernel kept the child on the forking CPU.
	KernelLocal int
}

func tally(ps []whatif.ForkPlacement) Tally {
	var t Tally
	for _, p := range ps {
		t.Forks++
		if p.Model == p.Kernel {
			t.Same++
		}
		if (p.Model == p.CPU) == (p.Kernel == p.CPU) {
			t.Side++
		}
		if p.Kernel == p.CPU {
			t.KernelLocal++
		}
	}
	return t
}

func (t *Tally) add(u Tally) {
	t.Forks += u.Forks
	t.Same += u.Same
	t.Side += u.Side
	t.KernelLocal += u.KernelLocal
}

func run(w io.Writer, path, policy string, verbose bool) error {
	_, err := score(w, path, policy, verbose)
	return err
}

// score prints the trace's forks and returns their tally.
func score(w io.Writer, path, policy string, verbose bool) (Tally, error) {
	dq, err := scriptutil.DelayedDequeues(path)
	if err != nil {
		return Tally{}, err
	}
	r, d, pol, err := scriptutil.KernelTrace(path, policy)
	if err != nil {
		return Tally{}, err
	}
	defer r.Close()
	ps, err := whatif.ForkShadow(r, d, pol, dq)
	if err != nil {
		return Tally{}, err
	}
	t := tally(ps)
	fmt.Fprintf(w, "%s: %d forks; the model placed %d on the kernel's CPU, and kept %d on the forking CPU or sent them away as the kernel did (the kernel kept %d)\n",
		path, t.Forks, t.Same, t.Side, t.KernelLocal)
	if verbose {
		for _, p := range ps {
			mark := ""
			if (p.Model == p.CPU) != (p.Kernel == p.CPU) {
				mark = "  <- differs"
			}
			fmt.Fprintf(w, "  %.6f child %d forked on cpu%d: kernel cpu%d, model cpu%d%s\n", float64(p.TimeNS)/1e9, p.Child, p.CPU, p.Kernel, p.Model, mark)
		}
	}
	return t, nil
}
