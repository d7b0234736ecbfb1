package whatif

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// nRuntimeNS is nRuntime with its runtime (ns).
func nRuntimeNS(t int64, cpu, pid int32, flags, ns int64) timeline.Event {
	e := nRuntime(t, cpu, pid, flags)
	e.SetInt(timeline.Runtime, ns)
	return e
}

// The tick's switch delays through Extract, by hand (HZ 250): on CPU 0
// task 10's tick at 4 ms is followed by its switch-out R at 4.09 ms, the
// kernel's update there charging it 70 µs (the rest was interrupt time):
// 70 µs. Excluded: task 11's tick at 8 ms, then a wakeup aimed at CPU 0
// before its switch-out R (a wakeup's preemption); task 12's at 12 ms,
// then its block (S); its tick at 16 ms and a switch-out R 1.5 ms later
// (past a quarter tick: not that tick's); on CPU 1 task 20's tick at 4.2
// ms, a task moved onto CPU 1, then 20's switch-out R. A non-IRQ update
// (at 24 ms) is no tick: 13's switch-out R at 24.05 ms counts nothing. On
// CPU 1 task 21's tick at 30 ms, its switch-out R+ (6.1's preempted
// state) at 30.2 ms with updates of 150 µs and, another task's, 20 µs:
// 150 µs; its tick at 34 ms, an update of 300 µs (more than the 100 µs
// the switch came after: clock skew) and the switch-out R: 100 µs. At
// 40 ms an hrtimer on CPU 1 wakes task 22 there (the waking in hard IRQ),
// its enqueue updating the running 20 in that interrupt at 40.08 ms,
// and 22 preempts 20 at 40.2 ms: the enqueue's update is no tick, so
// nothing counts.
func TestTickSwitchByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 20),
		nRuntime(4*ms, 0, 10, hardirq),
		nRuntime(4*ms+200000, 1, 20, hardirq),
		nRuntimeNS(4*ms+90000, 0, 10, 0, 70000),
		nSwitch(4*ms+90000, 0, 10, "R", 11),
		nMigrate(4*ms+250000, 1, 30, 0, 1),
		nSwitch(4*ms+300000, 1, 20, "R", 21),
		nRuntime(8*ms, 0, 11, hardirq),
		nWaking(8*ms+10000, 1, 21, 10, 0),
		nSwitch(8*ms+50000, 0, 11, "R", 12),
		nRuntime(12*ms, 0, 12, hardirq),
		nSwitch(12*ms+60000, 0, 12, "S", 10),
		nSwitch(14*ms, 0, 10, "S", 12),
		nRuntime(16*ms, 0, 12, hardirq),
		nSwitch(17*ms+500000, 0, 12, "R", 13),
		nRuntime(24*ms, 0, 13, 1),
		nSwitch(24*ms+50000, 0, 13, "R", 12),
		nRuntime(30*ms, 1, 21, hardirq),
		nRuntimeNS(30*ms+100000, 1, 22, 0, 20000),
		nRuntimeNS(30*ms+200000, 1, 21, 0, 150000),
		nSwitch(30*ms+200000, 1, 21, "R+", 20),
		nSwitch(31*ms, 1, 20, "S", 21),
		nRuntime(34*ms, 1, 21, hardirq),
		nRuntimeNS(34*ms+100000, 1, 21, 0, 300000),
		nSwitch(34*ms+100000, 1, 21, "R", 0),
		nSwitch(39*ms, 1, 0, "R", 20),
		withFlags(nWaking(40*ms, 1, 0, 22, 1), hardirq),
		nRuntime(40*ms+80000, 1, 20, hardirq),
		nSwitch(40*ms+200000, 1, 20, "R", 22),
	}}
	w := mustExtract(t, r)
	if want := []int64{70000, 100000, 150000}; !slices.Equal(w.TickSwitchNS, want) {
		t.Fatalf("tick switch delays %v, want %v", w.TickSwitchNS, want)
	}
}

// A committed 6.12 recording (guest-M r3 schbench) against a throw-away
// reader of the same rule over its timeline (session 33, 2026-12-02):
// 1,428 of its 1,696 tick records are followed by their task's
// switch-out R within 1 ms with no wakeup aimed at the CPU between, the
// gaps summing to 151,647,596 ns (median 92 µs), of which the kernel
// charged the task 113,752,933 ns (75 %); a replay switches at the
// tick's instant. Since round 65 an enqueue's hard-IRQ update is no tick
// (irqenqueue.go): 81 of those records were, 37 of them followed by the
// wakee's preemption that the old rule counted; a second throw-away
// reader (session 37), with and without that rule, gives 1,428 delays
// summing to 113,752,933 ns and 1,391 summing to 113,605,683. Round 66
// gives three of those records back to the ticks (each within 0.3 ms of
// its CPU's tick phase): two follow the waking of migration/0 and
// migration/1 (the stopper, prio 0), whose enqueue updates no CFS task
// (perf script shows the wakings), one a waking from the other
// SMT thread, which shares the cache and so enqueues its wakee itself
// (no IPI): 1,394 delays summing to 113,752,933 ns (the three add
// 147,250).
func TestTickSwitchFixture(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/v6.12/guest-M-1s1c2t/r3/schbench.perf.data.gz")
	var sum int64
	for _, d := range w.TickSwitchNS {
		sum += d
	}
	if len(w.TickSwitchNS) != 1394 || sum != 113752933 {
		t.Fatalf("%d delays summing to %d ns, want 1394 and 113752933", len(w.TickSwitchNS), sum)
	}
}

// The delay in the replay, by hand: two CFS hogs share one CPU from t0
// (HZ 250, v6.12). The first runs until the tick at 4 ms ends its
// request; with Config.TickSwitch and a measured delay of 90 µs (the
// only one in the pool) the switch to the second comes at 4.09 ms, the
// first having run on; without it, at the tick's instant. The option
// needs the machine's noise on (Config.IdleWake), as every measured delay
// does.
func TestTickSwitchDelaysTheSwitch(t *testing.T) {
	for _, c := range []struct {
		on       bool
		noise    bool
		wantNS   int64
		wantName string
	}{{false, true, 4 * ms, "off"}, {true, true, 4*ms + 90000, "on"}, {true, false, 4 * ms, "on without noise"}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 10*ms)
		b.task("b", 120, 0, true, CauseStart, 10*ms)
		w := b.done(t)
		w.TickSwitchNS = []int64{90000}
		cfg := policyConfig(t, "v6.12")
		cfg.TickSwitch, cfg.IdleWake = c.on, c.noise
		ck := newChecker(t)
		if _, err := Replay(w, cfg, ck); err != nil {
			t.Fatal(err)
		}
		if len(ck.runs) == 0 || ck.runs[0].end-t0 != c.wantNS {
			t.Errorf("%s: first run %+v, want it to end %d ns after t0", c.wantName, ck.runs, c.wantNS)
		}
	}
}
