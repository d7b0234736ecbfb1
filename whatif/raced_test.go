package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A waking that comes while its wakee still runs, just before the wakee
// blocks (its sched_waking before its switch-out in S), with no waking
// after the block: the kernel's try_to_wake_up waited for the switch and
// queued the task again, so that waking started its next activation.
// By hand, in each case: 10 runs on CPU 0 from 0.5 ms, 20 on CPU 1 from
// 0.5 ms; 10 wakes 20 at 2 ms (10 has run 1.5 ms), 20 switches out at
// 2.01 ms and in again at 2.3 ms, runs to 3 ms and sleeps; 10 sleeps at
// 4 ms.
//
//   - raced: 20 blocks (S): its second activation (0.7 ms) is caused by
//     10's edge (offset 1.5 ms), causal and Raced, released at the block
//     (2.01 ms), not an arrival at its switch-in.
//   - woken again: a second waking by 10 at 2.2 ms, after the block, is
//     the cause (offset 1.7 ms); the first stays redundant.
//   - preempted: 20 switches out in R: the waking found it queued and it
//     did not block; one activation, the waking redundant.
//   - from an interrupt (hard IRQ on CPU 1): no edge; the activation is an
//     arrival released at the block, not at the switch-in.
//   - long before: the waking at 1.5 ms, 0.51 ms before the block (past
//     raceWindowNS): taken without blocking; the switch-in without a
//     waking is an arrival released there (2.3 ms), the edge redundant.
//   - switch-in lost: as raced, but the trace lost 20's switch-in at 2.3
//     ms (its switch-out at 3 ms comes from a CPU the trace shows idle):
//     still the raced edge's activation, charged from the CPU's last
//     switch (2.01 ms): 0.99 ms.
func TestExtractRacedWakeup(t *testing.T) {
	irq := nWaking(2*ms, 1, 20, 20, 1)
	irq.SetInt(timeline.CommonFlags, hardirq)
	head := []timeline.Event{nSwitch(ms/2, 0, 0, "R", 10), nSwitch(ms/2, 1, 0, "R", 20)}
	tail := []timeline.Event{nSwitch(2*ms+300000, 1, 0, "R", 20), nSwitch(3*ms, 1, 20, "S", 0), nSwitch(4*ms, 0, 10, "S", 0)}
	for _, c := range []struct {
		name      string
		mid       []timeline.Event
		acts      int
		cause     Cause
		releaseNS int64
		edgeOff   int64 // the causal edge's offset, -1 none
		raced     bool
		demand    int64
		noTail    bool // the case's events end the trace (no common tail)
	}{
		{"raced", []timeline.Event{nWaking(2*ms, 0, 10, 20, 1), nSwitch(2*ms+10000, 1, 20, "S", 0)}, 2, CauseWake, 2*ms + 10000, 3 * ms / 2, true, 700000, false},
		{"woken again", []timeline.Event{nWaking(2*ms, 0, 10, 20, 1), nSwitch(2*ms+10000, 1, 20, "S", 0), nWaking(2*ms+200000, 0, 10, 20, 1)}, 2, CauseWake, 2*ms + 200000, 17 * ms / 10, false, 700000, false},
		{"preempted", []timeline.Event{nWaking(2*ms, 0, 10, 20, 1), nSwitch(2*ms+10000, 1, 20, "R", 0)}, 1, CauseStart, 0, -1, false, 0, false},
		{"from an interrupt", []timeline.Event{irq, nSwitch(2*ms+10000, 1, 20, "S", 0)}, 2, CauseArrival, 2*ms + 10000, -1, false, 700000, false},
		{"long before", []timeline.Event{nWaking(3*ms/2, 0, 10, 20, 1), nSwitch(2*ms+10000, 1, 20, "S", 0)}, 2, CauseArrival, 2*ms + 300000, -1, false, 700000, false},
		{"switch-in lost", []timeline.Event{nWaking(2*ms, 0, 10, 20, 1), nSwitch(2*ms+10000, 1, 20, "S", 0), nSwitch(3*ms, 1, 20, "S", 0), nSwitch(4*ms, 0, 10, "S", 0)}, 2, CauseWake, 2*ms + 10000, 3 * ms / 2, true, 990000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := append(append([]timeline.Event{}, head...), c.mid...)
			if !c.noTail {
				evs = append(evs, tail...)
			}
			w, err := Extract(&noiseReader{evs: evs})
			if err != nil {
				t.Fatal(err)
			}
			var t20 = -1
			for i, tk := range w.Tasks {
				if tk.TID == 20 {
					t20 = i
				}
			}
			if t20 < 0 {
				t.Fatal("task 20 not extracted")
			}
			acts := w.Tasks[t20].Activations
			if len(acts) != c.acts {
				t.Fatalf("task 20: %d activations %+v, want %d", len(acts), acts, c.acts)
			}
			last := acts[len(acts)-1]
			if c.acts == 2 && (last.Cause != c.cause || last.ReleaseNS != c.releaseNS || last.DemandNS != c.demand) {
				t.Errorf("task 20's second activation: cause %v released %d demand %d, want %v, %d, %d", last.Cause, last.ReleaseNS, last.DemandNS, c.cause, c.releaseNS, c.demand)
			}
			off, raced, causal := int64(-1), false, 0
			for _, e := range w.Edges {
				if int(e.Wakee) == t20 && e.Causal {
					causal++
					off, raced = e.OffsetNS, e.Raced
				}
			}
			if c.edgeOff >= 0 && causal != 1 || c.edgeOff < 0 && causal != 0 {
				t.Fatalf("%d causal edges to task 20, want %d", causal, map[bool]int{true: 1, false: 0}[c.edgeOff >= 0])
			}
			if off != c.edgeOff || raced != c.raced {
				t.Errorf("causal edge offset %d raced %v, want %d, %v", off, raced, c.edgeOff, c.raced)
			}
			if err := w.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// The replay holds a raced wakeup that finds its wakee still running
// until the wakee blocks, and wakes it then. Two CPUs, no idle-exit
// delay. A runs on CPU 0 (1 ms) and wakes B at 0.5 ms; B runs on CPU 1
// (0.6 ms, then 0.3 ms woken by A); runs listed as they end. By hand: the edge at 0.5 ms finds B
// running. Raced: held, written as sched_waking at 0.5 ms (as the kernel
// writes it, before the block); B blocks at 0.6 ms and A's wakeup places
// it: wake_affine_idle keeps the idle prev CPU 1, so B runs 0.6–0.9 ms
// there. perf's timehist (the analysis) drops a waking followed by the
// wakee's switch-out asleep, as it drops the trace's: no wakeup counted.
// Not raced: pending, B runs on without sleeping, 0–0.9 ms.
func TestRacedWakeupHeldUntilBlock(t *testing.T) {
	for _, c := range []struct {
		raced      bool
		runs       []string
		held, cont int64
		wakings    int
		count      int64
	}{
		{true, []string{"b@cpu1:0-6", "b@cpu1:6-9", "a@cpu0:0-10"}, 1, 0, 1, 0},
		{false, []string{"b@cpu1:0-9", "a@cpu0:0-10"}, 0, 1, 0, 0},
	} {
		t.Run(fmt.Sprint("raced=", c.raced), func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			a := b.task("a", 120, 0, true, CauseStart, ms)
			bt := b.task("b", 120, 1, true, CauseStart, 6*ms/10, 3*ms/10)
			b.edge(a, 0, ms/2, bt, 1)
			b.w.Edges[0].Raced = c.raced
			w := b.done(t)
			res, ch := replayChecked(t, w, testConfig())
			got := ch.namedCPURuns(map[int64]string{int64(w.Tasks[a].TID): "a", int64(w.Tasks[bt].TID): "b"})
			if fmt.Sprint(got) != fmt.Sprint(c.runs) {
				t.Errorf("runs (name@cpu:start-end in 0.1 ms) %v, want %v", got, c.runs)
			}
			if res.Stats.RacedHeld != c.held || res.Stats.ContinuedWithoutSleep != c.cont {
				t.Errorf("raced held %d, continued %d; want %d, %d", res.Stats.RacedHeld, res.Stats.ContinuedWithoutSleep, c.held, c.cont)
			}
			if len(ch.wakings) != c.wakings || res.Metrics.WakeupCount != c.count {
				t.Errorf("%d sched_waking, %d wakeups counted; want %d, %d", len(ch.wakings), res.Metrics.WakeupCount, c.wakings, c.count)
			}
			if c.raced && len(ch.wakings) == 1 && ch.wakings[0].Time != t0+ms/2 {
				t.Errorf("sched_waking at %d ns, want %d (when the edge fired, before the block)", ch.wakings[0].Time-t0, ms/2)
			}
		})
	}
}

// A raced wakeup that finds its wakee queued, woken but not yet run, is
// not held: try_to_wake_up on a TASK_RUNNING task writes nothing and does
// nothing, and the wakee runs its next activation on without sleeping.
// Two CPUs: A runs 1 ms on CPU 0 and wakes B at 0.5 ms; C runs 2 ms on
// CPU 1, where B (0.3 ms, then 0.3 ms woken by A) waits from the start.
// By hand: at 0.5 ms B is queued behind C; CPU 0, idle at 1 ms, pulls it
// (newidle balance) and B runs 1.0–1.6 ms: no sched_waking, one
// activation continued. Held as for a running wakee (the engine before),
// a sched_waking was written at 0.5 ms for a queued task and B slept at
// 1.3 ms to be woken at once: runs 1.0–1.3 and 1.3–1.6.
func TestRacedWakeupFindsWakeeQueued(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	a := b.task("a", 120, 0, true, CauseStart, ms)
	c := b.task("c", 120, 1, true, CauseStart, 2*ms)
	bt := b.task("b", 120, 1, false, CauseStart, 3*ms/10, 3*ms/10)
	b.edge(a, 0, ms/2, bt, 1)
	b.w.Edges[0].Raced = true
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	got := ch.namedCPURuns(map[int64]string{int64(w.Tasks[a].TID): "a", int64(w.Tasks[bt].TID): "b", int64(w.Tasks[c].TID): "c"})
	if want := "[a@cpu0:0-10 b@cpu0:10-16 c@cpu1:0-20]"; fmt.Sprint(got) != want {
		t.Errorf("runs (name@cpu:start-end in 0.1 ms) %v, want %s", got, want)
	}
	if res.Stats.RacedHeld != 0 || res.Stats.ContinuedWithoutSleep != 1 || len(ch.wakings) != 0 {
		t.Errorf("raced held %d, continued %d, %d sched_waking; want 0, 1, 0", res.Stats.RacedHeld, res.Stats.ContinuedWithoutSleep, len(ch.wakings))
	}
}

// On a real trace, checked against `perf script` of guest-P's schbench
// (fixtures/kernels/guest-P-1s2c1t/schbench.perf.data):
//
//	schbench-msg   416 [000] 15.438157: sched:sched_waking: comm=schbench-worker pid=425 prio=120 target_cpu=001
//	schbench-worker 425 [001] 15.438163: sched:sched_switch: prev_comm=schbench-worker prev_pid=425 prev_prio=120 prev_state=S ==> next_comm=schbench-worker next_pid=421 next_prio=120
//	schbench-msg   416 [000] 15.438234: sched:sched_stat_sleep: comm=schbench-worker pid=425 delay=114916 [ns]
//
// (the enqueue after the block, from the waker's CPU), and no waking of
// 425 before its next switch-in. The message thread's waking is the
// worker's next activation's cause: raced, released at the switch-out.
func TestRacedWakeupFixture(t *testing.T) {
	w, tid := fixtureTIDs(t, "../fixtures/kernels/guest-P-1s2c1t/schbench.perf.data")
	near := func(ns, us int64) bool { d := ns - us*1000; return d > -1000 && d < 1000 }
	for _, e := range w.Edges {
		if tid[e.Waker] != 416 || tid[e.Wakee] != 425 || !near(e.TimeNS, 15438157) {
			continue
		}
		if !e.Causal || !e.Raced {
			t.Fatalf("416's waking of 425 at 15.438157: causal %v raced %v, want both", e.Causal, e.Raced)
		}
		a := w.Tasks[e.Wakee].Activations[e.WakeeAct]
		if a.Cause != CauseWake || !near(a.ReleaseNS, 15438163) {
			t.Errorf("its activation: cause %v released %d ns, want a wakeup released at 15.438163 s", a.Cause, a.ReleaseNS)
		}
		return
	}
	t.Fatal("no edge from 416 to 425 at 15.438157")
}

// A raced wakeup whose wakee's CPU has nothing else to run once it blocks
// is queued on that CPU's wake list (ttwu_queue_cond: p->on_cpu, the
// target CPU idle), so select_task_rq_fair is not called: no record_wakee
// for the waker, no recent_used_cpu. The scenario of
// TestRacedWakeupHeldUntilBlock: a (CPU 0) wakes b (CPU 1) at 0.5 ms while
// b still runs; b blocks at 0.6 ms with CPU 1 empty: b runs again on CPU
// 1 and a's last wakee is not b. Woken after its block (not raced), b goes
// through select_task_rq and a records it.
func TestRacedWakeupWakeList(t *testing.T) {
	for _, raced := range []bool{true, false} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		a := b.task("a", 120, 0, true, CauseStart, ms)
		bt := b.task("b", 120, 1, true, CauseStart, 6*ms/10, 3*ms/10)
		if raced {
			b.edge(a, 0, ms/2, bt, 1)
			b.w.Edges[0].Raced = true
		} else {
			b.edge(a, 0, 7*ms/10, bt, 1)
		}
		s, _ := newSim(t, b.done(t), testConfig())
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		recorded := s.tasks[a].lastWakee == s.tasks[bt].id
		if recorded == raced {
			t.Errorf("raced %v: a's last wakee is b: %v, want %v", raced, recorded, !raced)
		}
	}
}
