package main

import (
	"sort"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const us = 1000

// A hand-worked schedule on two CPUs. CPU 1 runs G, D, F, E and B in
// turn, each sleeping after one update (vruntimes 150, 199, 250, 270 and
// 200 ms), then X; CPU 0 runs A (sleeping at vruntime 100 ms), then W.
//   - 1.0 ms: W wakes A on CPU 0; A runs at 1.1, first update 105.2 ms
//     after 0.2 ms: placed at 105, above 100: credited, on the waking
//     CPU, waited 0.1 ms.
//   - 1.2: A wakes G, target CPU 1, and CPU 0's next record moves it to
//     CPU 0 (select_task_rq's pull): on the waking CPU; it slept on CPU 1,
//     so its placement is unknown. It runs at 1.5.
//   - 1.35, 1.4, 1.45: A wakes D, F and B onto CPU 1, busy with X: each
//     placed at its own vruntime (199, 250, 200). D runs at 2.0 (and,
//     after X preempts it, again at 2.08: it ran first once), B at
//     2.1, F at 2.3: waits 0.65, 0.9 and 0.65 ms (median 0.65); B's first
//     update is written by CPU 0 (an enqueue there updating CPU 1's
//     running task), its vruntime still CPU 1's. At F's
//     waking D waits there, placed below F, and runs first; at B's, D
//     (below, runs first) and F (above, runs after B).
//   - 1.46: A wakes E onto CPU 1; at 1.6 a balancer on CPU 0 moves it
//     there, where it runs: left out.
//   - 3.0: W wakes A again; a lost record at 3.05; A's switch-in at 3.1
//     is not matched to a wakeup.
//
// So: credited on the waking CPU 1 (0.10 ms), own vruntime on another
// busy CPU 3 (0.65 ms), unknown 1; remote wakeups with known placement
// 3, with 2 woken tasks placed below them waiting (both ran first) and 1
// above (it did not).
func TestHandWorked(t *testing.T) {
	var evs []ev
	sw := func(at int64, cpu, prev int32, asleep bool, next int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedSwitch, prev: prev, asleep: asleep, pid: next})
	}
	stat := func(at int64, cpu, pid int32, rt, vr int64) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedStatRuntime, pid: pid, rt: rt, vr: vr})
	}
	wake := func(at int64, cpu, pid, target int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedWaking, pid: pid, target: target, match: true})
	}
	migrate := func(at int64, cpu, pid, dest int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedMigrateTask, pid: pid, target: dest})
	}
	const w, x, a, b, d, e, f, g = 10, 11, 12, 13, 14, 15, 16, 17
	sw(0, 0, 0, false, a)
	sw(0, 1, 0, false, g)
	stat(50*us, 1, g, 50*us, 150*ms)
	sw(50*us, 1, g, true, d)
	stat(200*us, 1, d, 150*us, 199*ms)
	sw(200*us, 1, d, true, f)
	stat(300*us, 1, f, 100*us, 250*ms)
	sw(300*us, 1, f, true, e)
	stat(350*us, 1, e, 50*us, 270*ms)
	sw(350*us, 1, e, true, b)
	stat(400*us, 1, b, 50*us, 200*ms)
	sw(400*us, 1, b, true, x)
	stat(500*us, 0, a, 500*us, 100*ms)
	sw(500*us, 0, a, true, w)
	wake(1*ms, 0, a, 0)
	sw(1100*us, 0, w, false, a)
	stat(1300*us, 0, a, 200*us, 105*ms+200*us)
	wake(1200*us, 0, g, 1)
	migrate(1200*us, 0, g, 0)
	wake(1350*us, 0, d, 1)
	wake(1400*us, 0, f, 1)
	wake(1450*us, 0, b, 1)
	wake(1460*us, 0, e, 1)
	sw(1500*us, 0, a, true, g)
	stat(1550*us, 0, g, 50*us, 300*ms+50*us)
	sw(1550*us, 0, g, true, w)
	migrate(1600*us, 0, e, 0)
	sw(1700*us, 0, w, false, e)
	sw(1800*us, 0, e, true, w)
	sw(2000*us, 1, x, false, d)
	stat(2050*us, 1, d, 50*us, 199*ms+50*us)
	sw(2050*us, 1, d, false, x)
	sw(2080*us, 1, x, false, d)
	stat(2100*us, 1, d, 50*us, 199*ms+100*us)
	sw(2100*us, 1, d, true, b)
	stat(2300*us, 0, b, 200*us, 200*ms+200*us)
	sw(2300*us, 1, b, true, f)
	stat(2400*us, 1, f, 100*us, 250*ms+100*us)
	sw(2400*us, 1, f, true, x)
	wake(3000*us, 0, a, 0)
	evs = append(evs, ev{t: 3050 * us, cpu: -1, kind: timeline.Lost})
	sw(3100*us, 0, w, false, a)
	// Time order, stable: the records above were written per CPU.
	sortByTime(evs)

	c := measure(evs)
	count := func(cls, local int) int { return len(c.waits[cls][local]) }
	if count(credited, 1) != 1 || median(c.waits[credited][1]) != "0.10" {
		t.Errorf("credited on the waking CPU: %v, want one of 0.1 ms", c.waits[credited][1])
	}
	if count(own, 0) != 3 || median(c.waits[own][0]) != "0.65" {
		t.Errorf("own vruntime on another busy CPU: %v, want three, median 0.65 ms", c.waits[own][0])
	}
	if count(credited, 0) != 0 || count(own, 1) != 0 {
		t.Errorf("credited remote %d, own local %d; want none", count(credited, 0), count(own, 1))
	}
	if n := count(unknown, 0) + count(unknown, 1); n != 1 {
		t.Errorf("placement unknown: %d, want 1 (G)", n)
	}
	if c.remote != 3 || c.ahead != [2]int64{2, 1} || c.ranFirst != [2]int64{2, 0} {
		t.Errorf("backlog: remote %d, ahead %v, ran first %v; want 3, [2 1], [2 0]", c.remote, c.ahead, c.ranFirst)
	}
}

const ms = 1000 * us

func sortByTime(evs []ev) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
}
