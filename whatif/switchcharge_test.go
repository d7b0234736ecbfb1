package whatif

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The switch-charge gaps through Extract, by hand (HZ 250: gaps of 1 ms
// or more are not a switch's). CPU 0: task 10, switched in at 1 ms, is
// updated at 1.5 ms and blocks (S) at 1.54 ms: a block's 40 µs, counted
// when task 11 wakes it from its own context at 1.9 ms (a task's
// wakeup). Task 11, updated at 2 ms, is preempted (R) at 2.016 ms: 16 µs.
// Task 10, updated at 2.9 ms, exits (X) at 3 ms: not counted (its charge
// goes nowhere that matters). Task 12, updated at 4 ms, blocks at 6 ms:
// not counted (the loss below, on CPU 1 at 3 ms, left what every CPU
// runs unknown). Task 13, switched in at 6 ms, updated at 6.5 ms,
// blocks at 6.57 ms: 70 µs, woken at 8 ms in hard-IRQ context (its
// timer): an interrupt's wakeup. CPU 1: task 20, switched in at 1 ms, is
// updated at 2 ms by a record written on CPU 0 (a remote enqueue's
// update_curr) and preempted (R+, 6.1's state) at 2.03 ms: 30 µs. Task
// 21, updated at 2.5 ms, blocks at 2.52 ms and is never woken: not
// counted. Records are lost on CPU 1 at 3 ms; task 22, updated at 3.5 ms
// and switched out at 3.52 ms, is not counted (what CPU 1 ran is unknown
// after the loss).
func TestSwitchChargeByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 20),
		nRuntimeNS(1*ms+500000, 0, 10, 0, 500000),
		nSwitch(1*ms+540000, 0, 10, "S", 11),
		nWaking(1*ms+900000, 0, 11, 10, 0),
		nRuntimeNS(2*ms, 0, 11, 0, 460000),
		nRuntimeNS(2*ms, 0, 20, 0, 1000000),
		nSwitch(2*ms+16000, 0, 11, "R", 10),
		nSwitch(2*ms+30000, 1, 20, "R+", 21),
		nRuntimeNS(2*ms+500000, 1, 21, 0, 470000),
		nSwitch(2*ms+520000, 1, 21, "S", 22),
		nRuntimeNS(2*ms+900000, 0, 10, 0, 884000),
		nSwitch(3*ms, 0, 10, "X", 12),
		nLost(3*ms, 1),
		nRuntimeNS(3*ms+500000, 1, 22, 0, 100000),
		nSwitch(3*ms+520000, 1, 22, "S", 0),
		nRuntimeNS(4*ms, 0, 12, 0, 1000000),
		nSwitch(6*ms, 0, 12, "S", 13),
		nRuntimeNS(6*ms+500000, 0, 13, 0, 500000),
		nSwitch(6*ms+570000, 0, 13, "S", 0),
		withFlags(nWaking(8*ms, 0, 0, 13, 0), hardirq),
	}}
	w := mustExtract(t, r)
	checkPools(t,
		pool{"block, a task's wakeup next", w.SwitchChargeBlockNS, []int64{40000}},
		pool{"block, an interrupt's wakeup next", w.SwitchChargeBlockIRQNS, []int64{70000}},
		pool{"preemption", w.SwitchChargePreemptNS, []int64{16000, 30000}},
	)
	if len(w.LongSwitchCharges) != 0 {
		t.Errorf("long charges %+v, want none", w.LongSwitchCharges)
	}
}

// Long charges through Extract, by hand (HZ 250: a quarter tick is 1 ms).
// CPU 0: task 30, switched in at 1 ms and updated at 1.2 ms, blocks (S)
// at 3.7 ms: a 2.5 ms gap, kept at its activation 0 (not in the pools).
// Task 31 wakes it at 4 ms; task 30, switched in at 4.1 ms (task 31
// preempted, not updated since its switch-in: not counted) and updated
// at 4.5 ms, blocks at 4.54 ms: 40 µs, in the block pool once task 33
// wakes it at 10 ms, and its activation 1 has no long charge. Task 31,
// updated at 5 ms, is preempted (R) at 7 ms: a long gap after a
// preemption, in neither (the replay's preemptions fall elsewhere). Task 32, switched in at 7 ms and
// updated at 7.1 ms, blocks (S) at 9 ms and is woken by task 33 at 9.2
// ms; task 34, switched in at 9 ms, updated at 9.3 ms, exits (X) at 11
// ms: nothing kept (its charge goes nowhere that matters). CPU 1: task
// 33, updated at 9.1 ms; task 35, switched in at 1 ms and updated at 1.5
// ms, blocks in D at 2.8 ms (1.3 ms), woken by task 33 at 9.15 ms: kept.
func TestLongSwitchChargeByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 30),
		nSwitch(1*ms, 1, 0, "R", 35),
		nRuntimeNS(1*ms+200000, 0, 30, 0, 200000),
		nRuntimeNS(1*ms+500000, 1, 35, 0, 500000),
		nSwitch(2*ms+800000, 1, 35, "D", 33),
		nSwitch(3*ms+700000, 0, 30, "S", 31),
		nWaking(4*ms, 0, 31, 30, 0),
		nSwitch(4*ms+100000, 0, 31, "R", 30),
		nRuntimeNS(4*ms+500000, 0, 30, 0, 400000),
		nSwitch(4*ms+540000, 0, 30, "S", 31),
		nRuntimeNS(5*ms, 0, 31, 0, 460000),
		nSwitch(7*ms, 0, 31, "R", 32),
		nRuntimeNS(7*ms+100000, 0, 32, 0, 100000),
		nSwitch(9*ms, 0, 32, "S", 34),
		nRuntimeNS(9*ms+100000, 1, 33, 0, 6300000),
		nWaking(9*ms+150000, 1, 33, 35, 1),
		nWaking(9*ms+200000, 1, 33, 32, 0),
		nRuntimeNS(9*ms+300000, 0, 34, 0, 300000),
		nWaking(10*ms, 1, 33, 30, 0),
		nSwitch(11*ms, 0, 34, "X", 0),
	}}
	w := mustExtract(t, r)
	var long []string
	for _, l := range w.LongSwitchCharges {
		long = append(long, fmt.Sprintf("%d/%d:%d", w.Tasks[l.Task].TID, l.Act, l.NS))
	}
	// In task order (first seen: 30, 35, 31, 32, ...).
	if got, want := strings.Join(long, " "), "30/0:2500000 35/0:1300000 32/0:1900000"; got != want {
		t.Errorf("long charges (tid/activation:ns) %q, want %q", got, want)
	}
	checkPools(t,
		pool{"block, a task's wakeup next", w.SwitchChargeBlockNS, []int64{40000}},
		pool{"block, an interrupt's wakeup next", w.SwitchChargeBlockIRQNS, nil},
		pool{"preemption", w.SwitchChargePreemptNS, nil},
	)
	if got := w.SwitchChargeSummary(); got == nil || got.LongBlocks != 3 || got.LongNS != 5700000 {
		t.Errorf("summary %+v, want 3 long blocks, 5700000 ns", got)
	}
}

// A committed 6.12 recording (guest-M r3 schbench) against a throw-away
// reader of perf's own dump of the same perf.data (`perf script -D`, in
// Python, round 63: the timestamps from the sample headers, sched_waking's
// common_flags and common_pid from the raw bytes): per CPU the task
// switched in, per task its last sched_stat_runtime anywhere, and at each
// switch-out of a task updated since its switch-in the gap to the switch
// under 1 ms. After a block, 102 gaps summing to 5,213,224 ns before a
// task's wakeup and 131 summing to 9,127,736 ns before one from interrupt
// context (hard or soft IRQ, NMI, or no task); after a preemption 1,518
// summing to 60,911,875 ns. Their medians (the middle of each sorted
// pool), which --validate reports: 43,984, 44,855 and 29,606 ns. One
// block's gap is longer, kept at its activation (longcharge.go): task
// 459's switch-out in S at 12.094317850, 1,117,068 ns after its last
// update (perf script --ns of the same file, read the same way).
func TestSwitchChargeFixture(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/v6.12/guest-M-1s1c2t/r3/schbench.perf.data.gz")
	for _, c := range []struct {
		name string
		pool []int64
		n    int
		sum  int64
	}{
		{"block", w.SwitchChargeBlockNS, 102, 5213224},
		{"block, interrupt", w.SwitchChargeBlockIRQNS, 131, 9127736},
		{"preemption", w.SwitchChargePreemptNS, 1518, 60911875},
	} {
		var sum int64
		for _, d := range c.pool {
			sum += d
		}
		if len(c.pool) != c.n || sum != c.sum {
			t.Errorf("%s: %d gaps summing to %d ns, want %d and %d", c.name, len(c.pool), sum, c.n, c.sum)
		}
	}
	want := SwitchChargeSummary{Switches: 1751, PreemptP50NS: 29606, BlockP50NS: 43984, BlockIRQP50NS: 44855, LongBlocks: 1, LongNS: 1117068}
	if got := w.SwitchChargeSummary(); got == nil || *got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if len(w.LongSwitchCharges) != 1 {
		t.Fatalf("long charges %+v, want one", w.LongSwitchCharges)
	}
	l := w.LongSwitchCharges[0]
	if tid := w.Tasks[l.Task].TID; tid != 459 || l.NS != 1117068 {
		t.Errorf("long charge of task %d, %d ns, want task 459's 1117068", tid, l.NS)
	}
	acts := w.Tasks[l.Task].Activations
	if a := acts[l.Act]; a.End != EndSleep || a.EndState != "S" || int(l.Act)+1 >= len(acts) || acts[l.Act+1].ReleaseNS-acts[l.Act+1].SleepNS != 12094317850 {
		t.Errorf("long charge's activation %d %+v: want the one that blocked (S) at 12.094317850", l.Act, a)
	}
}

// runtimes keeps the sched_stat_runtime rows per task.
type runtimes map[int64][][2]int64 // pid -> (time, runtime)

func (r runtimes) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedStatRuntime {
		pid := e.Int(timeline.PID)
		r[pid] = append(r[pid], [2]int64{e.Time, e.Int(timeline.Runtime)})
	}
	return nil
}

// at is task pid's update at time ts (-1: none).
func (r runtimes) at(pid, ts int64) int64 {
	for _, x := range r[pid] {
		if x[0] == ts {
			return x[1]
		}
	}
	return -1
}

// The charge in the replay, by hand (one CPU, v6.12). a runs 1 ms from t0
// and blocks for good; b, queued at t0, then runs its 5 ms and blocks.
// With the switch charge and a block gap of 40 µs (the only one in the
// pool for a block a task's wakeup ends) a's update at its block charges
// it 960 µs, and b's first update
// (the tick's at t0 + 4 ms) adds those 40 µs to its own 3 ms since its
// switch-in at t0 + 1 ms. If a's next activation is its timer's (an
// arrival), the gap is the interrupt pool's 70 µs. With a long charge of
// 300 µs at a's block (LongSwitchCharges), that charge takes the draw's
// place: a is charged 700 µs and b carries 300 µs in (drawn from the
// pools instead with switch_charge=pools). Off,
// or without the machine's noise (Config.IdleWake), each update charges
// the time since the last. When the runs happen is the same either way.
//
// A preemption's gap comes out of what the leaving task ran since its
// last update: two hogs, a's request used up at the tick at t0 + 4 ms,
// the tick's switch delayed 90 µs (Config.TickSwitch): with a preemption
// gap of 16 µs a's update at the switch charges it 74 µs and b's first
// adds the 16 µs.
func TestSwitchChargeInTheReplay(t *testing.T) {
	for _, c := range []struct {
		name                   string
		on, noise, hogs, timer bool
		long                   int64 // a's block's long charge (LongSwitchCharges)
		pools                  bool  // Config.SwitchChargePoolsOnly
		wantSwitch             int64 // a's update at b's switch-in
		wantCarry              int64 // b's first update beyond its time since that switch-in
	}{
		{"block, on", true, true, false, false, 0, false, 960000, 40000},
		{"block with a long charge, on", true, true, false, false, 300000, false, 700000, 300000},
		{"block with a long charge, pools", true, true, false, false, 300000, true, 960000, 40000},
		{"block with a long charge, off", false, true, false, false, 300000, false, 1000000, 0},
		{"block before a timer's wakeup, on", true, true, false, true, 0, false, 930000, 70000},
		{"block, off", false, true, false, false, 0, false, 1000000, 0},
		{"block, on without noise", true, false, false, false, 0, false, 1000000, 0},
		{"preemption, on", true, true, true, false, 0, false, 74000, 16000},
		{"preemption, off", false, true, true, false, 0, false, 90000, 0},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		if c.hogs {
			b.task("a", 120, 0, true, CauseStart, 10*ms)
			b.task("b", 120, 0, false, CauseStart, 10*ms)
		} else {
			b.task("a", 120, 0, true, CauseStart, 1*ms)
			b.task("b", 120, 0, false, CauseStart, 5*ms)
		}
		w := b.done(t)
		w.SwitchChargeBlockNS = []int64{40000}
		w.SwitchChargeBlockIRQNS = []int64{70000}
		w.SwitchChargePreemptNS = []int64{16000}
		if c.timer {
			// a sleeps 10 ms, then runs 1 ms more: woken by its timer.
			w.Tasks[0].Activations = append(w.Tasks[0].Activations, Activation{DemandNS: 1 * ms, Cause: CauseArrival, SleepNS: 10 * ms, End: EndSleep, EndState: "S", CPU: 0})
			w.Index()
		}
		w.TickSwitchNS = []int64{90000}
		if c.long > 0 {
			w.LongSwitchCharges = []LongSwitchCharge{{Task: 0, Act: 0, NS: c.long}}
			if err := w.Validate(); err != nil {
				t.Fatal(err)
			}
		}
		cfg := policyConfig(t, "v6.12")
		cfg.SwitchCharge, cfg.IdleWake, cfg.TickSwitch, cfg.SwitchChargePoolsOnly = c.on, c.noise, c.hogs, c.pools
		rt := runtimes{}
		ck := checkerFor(t, cfg, w)
		if _, err := Replay(w, cfg, Tee{ck, rt}); err != nil {
			t.Fatal(err)
		}
		a, bb := int64(w.Tasks[0].TID), int64(w.Tasks[1].TID)
		starts := ck.runStarts(bb)
		if len(starts) == 0 || len(rt[bb]) == 0 {
			t.Fatalf("%s: b never ran: %+v", c.name, ck.runs)
		}
		wantStart := int64(1 * ms)
		if c.hogs {
			wantStart = 4*ms + 90000
		}
		if starts[0] != wantStart {
			t.Errorf("%s: b switched in at t0 + %d ns, want %d", c.name, starts[0], wantStart)
		}
		if got := rt.at(a, t0+starts[0]); got != c.wantSwitch {
			t.Errorf("%s: a's update at b's switch-in charged %d ns, want %d", c.name, got, c.wantSwitch)
		}
		first := rt[bb][0]
		if got := first[1] - (first[0] - t0 - starts[0]); got != c.wantCarry {
			t.Errorf("%s: b's first update charged %d ns beyond its run since its switch-in, want %d", c.name, got, c.wantCarry)
		}
	}
}

// BenchmarkSwitchChargeTally measures the switch-charge tally's cost per
// event (a map write per sched_stat_runtime, a lookup per waking and per
// switch) on the largest real fixture: what it adds to extraction.
func BenchmarkSwitchChargeTally(b *testing.B) {
	benchEvents(b, func() func(*timeline.Event) {
		t := newSwitchChargeTally(4000000)
		return func(e *timeline.Event) {
			if e.IsSet(timeline.CPU) {
				t.observe(e, e.Int32(timeline.CPU))
			}
		}
	})
}
