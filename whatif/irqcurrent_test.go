package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Workload.IRQCurrent from a trace, by hand. 10 runs on CPU 0 from 1 ms;
// 30 and 40 run on CPU 1 and block, leaving it idle. (a) At 3 ms CPU 0's
// softirq (0x11), 10 running, wakes 30 (target CPU 1): an arrival that
// interrupted 10. (b) At 4 ms a hard IRQ on idle CPU 1 (common_pid 0)
// wakes 40: it interrupted nobody. (c) At 5 ms 10 wakes 30 in task
// context: a wake edge, no interrupt. (d) At 5.6 ms CPU 0's hard IRQ
// (0x09), 10 running, wakes 40 (target 1): interrupted 10. (e) At 6.5 ms
// CPU 0's softirq wakes 30 with common_pid 77, a task the trace never
// showed: left out (the replay has no such task to count it on).
func TestIRQCurrentExtracted(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 30),
		nSwitch(2*ms, 1, 30, "S", 40),
		nSwitch(2500000, 1, 40, "S", 0),
		withFlags(nWaking(3*ms, 0, 10, 30, 1), softirq),
		nSwitch(3100000, 1, 0, "R", 30),
		nSwitch(3500000, 1, 30, "S", 0),
		withFlags(nWaking(4*ms, 1, 0, 40, 1), hardirq),
		nSwitch(4050000, 1, 0, "R", 40),
		nSwitch(4500000, 1, 40, "S", 0),
		nWaking(5*ms, 0, 10, 30, 1),
		nSwitch(5100000, 1, 0, "R", 30),
		nSwitch(5500000, 1, 30, "S", 0),
		withFlags(nWaking(5600000, 0, 10, 40, 1), hardirq),
		nSwitch(5700000, 1, 0, "R", 40),
		nSwitch(6*ms, 1, 40, "S", 0),
		withFlags(nWaking(6500000, 0, 77, 30, 1), softirq),
		nSwitch(6600000, 1, 0, "R", 30),
		nSwitch(7*ms, 1, 30, "S", 0),
		nSwitch(8*ms, 0, 10, "S", 0),
	}}
	w := mustExtract(t, r)
	idx := map[int32]int32{}
	for i, tk := range w.Tasks {
		idx[tk.TID] = int32(i)
	}
	want := fmt.Sprint([]IRQCurrent{{idx[30], 1, idx[10]}, {idx[40], 2, idx[10]}})
	if got := fmt.Sprint(w.IRQCurrent); got != want {
		t.Errorf("irq_current %s, want %s (30's arrival at 3 ms and 40's at 5.6 ms, both interrupting 10)", got, want)
	}
	for _, q := range w.IRQCurrent {
		if a := w.Tasks[q.Task].Activations[q.Act]; a.Cause != CauseArrival || a.IRQ == IRQNone {
			t.Errorf("task %d activation %d: %s in context %s, want an interrupt's arrival", q.Task, q.Act, a.Cause, a.IRQ)
		}
	}
}

// Whose wakee_flips an interrupt's wakeup counts on, by hand, on 2 CPUs.
// P runs on CPU 0 and H on CPU 1 throughout. The trace's softirq on CPU 0
// woke kthread K (asleep on CPU 1) while P ran, at 4 ms (IRQCurrent).
// record_wakee runs on current: P, 0 → 1 flips, and the child C P forks
// at 8 ms starts with P's 1. The replay fires K's wakeup on CPU 1, where
// H runs: counted there (`irq_flip=own`, the rule before round 83) H
// flips instead and C starts at 0. A second interrupt arrival, J, the
// trace shows interrupting the idle task (no IRQCurrent): nobody flips
// with the rule, H again without it.
func TestIRQFlipCountsTheInterruptedTask(t *testing.T) {
	for _, c := range []struct {
		trace               bool
		wantP, wantC, wantH uint32
	}{
		{true, 1, 1, 0},
		{false, 0, 0, 2},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		pt := b.task("p", 120, 0, true, CauseStart, 20*ms)
		ht := b.task("h", 120, 1, true, CauseStart, 20*ms)
		ct := b.task("c", 120, 0, false, CauseFork, ms)
		b.w.Tasks[ct].Forked = true
		b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: pt, OffsetNS: 8 * ms, Wakee: ct})
		kt := b.task("k", 120, 1, false, CauseArrival, 10000)
		b.w.Tasks[kt].Activations[0].ReleaseNS = t0 + 4*ms
		b.w.Tasks[kt].Activations[0].IRQ = IRQSoft
		jt := b.task("j", 120, 1, false, CauseArrival, 10000)
		b.w.Tasks[jt].Activations[0].ReleaseNS = t0 + 5*ms
		b.w.Tasks[jt].Activations[0].IRQ = IRQHard
		b.w.IRQCurrent = []IRQCurrent{{Task: kt, Act: 0, Curr: pt}}
		w := b.done(t)
		cfg := testConfig()
		cfg.IRQFlip = c.trace
		s, _ := newSim(t, w, cfg)
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		got := [3]uint32{s.tasks[pt].wakeeFlips, s.tasks[ct].wakeeFlips, s.tasks[ht].wakeeFlips}
		if want := [3]uint32{c.wantP, c.wantC, c.wantH}; got != want {
			t.Errorf("irq_flip trace=%v: wakee_flips of P, C, H %v, want %v", c.trace, got, want)
		}
	}
}

// Validate refuses an IRQCurrent row that names no interrupt's arrival of
// the workload, or no other task (the streaming writer's checks are
// TestWorkloadWriterValidates').
func TestIRQCurrentValidate(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	pt := b.task("p", 120, 0, true, CauseStart, 20*ms)
	kt := b.task("k", 120, 1, false, CauseArrival, 10000)
	b.w.Tasks[kt].Activations[0].ReleaseNS = t0 + 4*ms
	b.w.Tasks[kt].Activations[0].IRQ = IRQSoft
	ht := b.task("h", 120, 1, false, CauseArrival, 10000)
	b.w.Tasks[ht].Activations[0].ReleaseNS = t0 + 5*ms
	w := b.done(t)
	for _, c := range []struct {
		q   []IRQCurrent
		bad bool
	}{
		{[]IRQCurrent{{kt, 0, pt}}, false},
		{[]IRQCurrent{{kt, 1, pt}}, true},              // no such activation
		{[]IRQCurrent{{kt, 0, kt}}, true},              // the wakee itself
		{[]IRQCurrent{{kt, 0, 9}}, true},               // no such task
		{[]IRQCurrent{{kt, -1, pt}}, true},             // no such activation
		{[]IRQCurrent{{pt, 0, kt}}, true},              // not an arrival
		{[]IRQCurrent{{ht, 0, pt}}, true},              // an arrival not in interrupt context
		{[]IRQCurrent{{kt, 0, pt}, {kt, 0, pt}}, true}, // twice
	} {
		w.IRQCurrent = c.q
		if err := w.Validate(); (err != nil) != c.bad {
			t.Errorf("%v: Validate %v, want an error %v", c.q, err, c.bad)
		}
	}
}

// On a real trace: 6.1's hackbench on guest-N (two NUMA nodes of one CPU:
// sd_llc_size 1, so wake_wide() holds once a receiver has one flip),
// repeat r6. perf's own reading of the records (`perf script -s` with a
// Python handler printing common_flags): before its first fork
// (10.183968985) the parent, 339, is interrupted nine times by CPU 0's
// softirq (0x11) waking rcu_preempt (eight) and ksoftirqd/0 (one, a
// per-CPU thread, no flip): extraction keeps those nine as interrupting
// it. The kernel's receivers, forked with the parent's flip, are woken
// wide and stay where they are: `perf script` shows 15 migrations at a
// wakeup (a sched_migrate_task of the task just woken on that CPU; the
// analysis's MigrationsAtWakeup, which finds them in the replay's output
// too). The replay (seed 0) counting those interrupts on the parent moves none at a
// wakeup; counting them on the task it runs where they fire
// (irq_flip=own) it forked the receivers with no flip and pulled them
// onto their senders 152 times (67 to 221 over seeds 0–29; FIDELITY.md
// round 83).
func TestIRQFlipOnARealTrace(t *testing.T) {
	const path = "../fixtures/kernels/repeats/guest-N-2s1c1t-2numa/r6/hackbench.perf.data.gz"
	const firstFork = 10183968985
	w, _ := extractFixture(t, path)
	parent := int32(-1)
	for i, tk := range w.Tasks {
		if tk.TID == 339 {
			parent = int32(i)
		}
	}
	n := 0
	for _, q := range w.IRQCurrent {
		a := w.Tasks[q.Task].Activations[q.Act]
		if q.Curr != parent || a.ReleaseNS >= firstFork {
			continue
		}
		n++
		if c := w.Tasks[q.Task].Comm; c != "rcu_preempt" && c != "ksoftirqd/0" {
			t.Errorf("the parent interrupted by a wakeup of %s at %d", c, a.ReleaseNS)
		}
	}
	if n != 9 {
		t.Errorf("%d interrupt wakeups counted on the parent before its first fork, want perf's 9", n)
	}
	pulls := func(trace bool) int64 {
		cfg := DefaultConfig(mustPolicy(t, "v6.1"))
		cfg.IRQFlip = trace
		res, err := Replay(w, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The analysis of the replay's output finds the engine's own
		// wakeup placements, by the records the kernel's would leave.
		if m := res.Metrics.MigrationsAtWakeup; m == nil || *m != res.Stats.MigrationsWakeup {
			t.Errorf("irq_flip trace=%v: the output shows %v migrations at a wakeup, the engine made %d", trace, m, res.Stats.MigrationsWakeup)
		}
		return res.Stats.MigrationsWakeup
	}
	if got := pulls(true); got > 30 {
		t.Errorf("interrupts counted on the task they interrupted: %d migrations at a wakeup, want at most twice the trace's 15", got)
	}
	if got := pulls(false); got < 60 {
		t.Errorf("interrupts counted on the replay's task where they fire: %d migrations at a wakeup, want the receivers pulled (over 60)", got)
	}
}
