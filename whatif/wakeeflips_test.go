package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// The telling placements of hand-built traces, scored by hand. Two cores
// in one LLC (sd_llc_size 2). W (10) runs on CPU 0, X (20) on CPU 1, P
// (30) last ran on CPU 1; all three and T1..T4 (41..44) are alive at the
// start, so each begins with the candidate count N. W wakes T1..T4 (onto
// CPU 1), then P. At P's wakeup W has (N >> 1) + 5 flips (its first
// record_wakee halves the start count, two seconds in; five distinct
// wakees) and P has N, so wake_wide (slave >= 2, master >= 2 slave) is
// true for N = 2 (6 against 2) and N = 3 (6 against 3) only. W leaving its
// CPU 100 µs later makes the wakeup WF_SYNC, so P staying on busy CPU 1
// is explained by N = 2 and 3, and P pulled to CPU 0 by every other N.
func TestFlipFitByHand(t *testing.T) {
	const b = 2000 * ms
	start := []timeline.Event{
		nSwitch(b, 0, 0, "R", 10), nSwitch(b, 1, 0, "R", 30), nSwitch(b+ms, 1, 30, "S", 20),
	}
	for i := int32(1); i <= 4; i++ {
		start = append(start, nWaking(b+2*ms+int64(i)*10000, 0, 10, 40+i, 1))
	}
	wakeP := nWaking(b+3*ms, 0, 10, 30, 1)
	stayed := []int{0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	pulled := []int{1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1}
	none := make([]int, nFlipCandidates)
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want []int
	}{
		{"stays on its busy previous CPU", []timeline.Event{wakeP, nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, stayed},
		{"pulled to the waker's CPU", []timeline.Event{wakeP, nRuntime(b+3*ms+5000, 0, 10, 1), nMigrate(b+3*ms+10000, 0, 30, 1, 0), nSwitch(b+3*ms+100000, 0, 10, "S", 30)}, pulled},
		{"the waker stays on its CPU too long: not WF_SYNC", []timeline.Event{wakeP, nSwitch(b+3*ms+300000, 0, 10, "S", 0)}, none},
		{"the waker preempted within the window: WF_SYNC's evidence too", []timeline.Event{wakeP, nSwitch(b+3*ms+50000, 0, 10, "R", 50), nSwitch(b+3*ms+100000, 0, 50, "S", 10)}, stayed},
		{"an interrupt's wakeup", []timeline.Event{withFlags(wakeP, hardirq), nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
		{"the waker not alone on its CPU", []timeline.Event{nSwitch(b+2500000, 0, 10, "R", 10), nWaking(b+2600000, 0, 10, 60, 0),
			wakeP, nSwitch(b+3*ms+100000, 0, 10, "S", 60)}, none},
		{"moved elsewhere: says nothing", []timeline.Event{wakeP, nMigrate(b+3*ms+10000, 0, 30, 1, 2), nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
		{"lost records forget the pending placement", []timeline.Event{wakeP, {Kind: timeline.Lost}, nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
	} {
		topo, err := model.ParseSpec("sockets=1,cores=2,threads=1")
		if err != nil {
			t.Fatal(err)
		}
		f := newFlipFit(topo, "6.1.0")
		for _, e := range append(append([]timeline.Event{}, start...), c.evs...) {
			f.observe(&e)
		}
		if got := f.score[:]; fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: scores %v, want %v (candidates %v)", c.name, got, c.want, flipCandidates)
		}
	}
}

// A fork copies the parent's counts (dup_task_struct), for every
// candidate.
func TestFlipFitForkInherits(t *testing.T) {
	topo, _ := model.ParseSpec("sockets=1,cores=2,threads=1")
	f := newFlipFit(topo, "6.1.0")
	const b = 2000 * ms
	for _, e := range []timeline.Event{nSwitch(b, 0, 0, "R", 10), nWaking(b+ms, 0, 10, 41, 1), nFork(b+2*ms, 0, 10, 50)} {
		f.observe(&e)
	}
	want := [nFlipCandidates]uint32{}
	for k, n := range flipCandidates {
		want[k] = n>>1 + 1
	}
	if f.tasks[10].flips != want || f.tasks[50].flips != want {
		t.Errorf("parent %v, child %v; want both %v", f.tasks[10].flips, f.tasks[50].flips, want)
	}
}

func nFork(t int64, cpu, parent, child int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedProcessFork, "sched:sched_process_fork"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.ParentPID, int64(parent))
	e.SetInt(timeline.ChildPID, int64(child))
	return e
}

// The choice: the smallest candidate with the best score, when it
// explains at least max(5, a tenth of the placements) more than 0 does.
func TestFlipFitResult(t *testing.T) {
	for _, c := range []struct {
		n     int
		score [nFlipCandidates]int
		want  FlipFit
	}{
		{13, [nFlipCandidates]int{1, 1, 13, 13, 13, 13, 13, 13, 13, 13, 13}, FlipFit{2, 13, 13, 1}},
		{9, [nFlipCandidates]int{0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9}, FlipFit{0, 9, 0, 0}},
		{165, [nFlipCandidates]int{149, 149, 149, 149, 149, 149, 149, 149, 164, 161, 154}, FlipFit{0, 165, 149, 149}},
		{231, [nFlipCandidates]int{178, 178, 178, 178, 178, 178, 178, 179, 225, 215, 196}, FlipFit{16, 231, 225, 178}},
		{132, [nFlipCandidates]int{113, 113, 113, 113, 113, 113, 113, 113, 25, 49, 114}, FlipFit{0, 132, 113, 113}},
	} {
		f := &flipFit{n: c.n, score: c.score}
		if got := f.result(); got != c.want {
			t.Errorf("%d placements, scores %v: %+v, want %+v", c.n, c.score, got, c.want)
		}
	}
	var nilFit *flipFit
	if got := nilFit.result(); got != (FlipFit{}) {
		t.Errorf("no fit (no topology): %+v", got)
	}
}

// The committed recordings' choices. A throw-away reader of `perf script`
// (its own record_wakee replay, without common_flags, so interrupt
// wakeups counted as their task's) chose the same: guest-A's hackbench 16
// (88 of its 89 telling placements, 45 at 0), guest-M's 2 (15 of 15, 3 at
// 0); guest-A's schbench has telling placements that no start count
// explains well (futex wakeups, not WF_SYNC: no clear choice, so 0).
func TestFlipFitFixtures(t *testing.T) {
	for _, c := range []struct {
		path string
		want uint32
	}{
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/hackbench.perf.data", 16},
		{"../fixtures/kernels/guest-M-1s1c2t/hackbench.perf.data", 2},
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data", 0},
	} {
		w, _ := extractFixture(t, c.path)
		if w.Flips.WakeeFlips != c.want || w.Flips.Placements < minFlipPlacements {
			t.Errorf("%s: %+v, want wakee_flips %d from at least %d telling placements", c.path, w.Flips, c.want, minFlipPlacements)
		}
	}
}
