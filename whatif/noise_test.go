package whatif

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

type noiseReader struct {
	evs  []timeline.Event
	i    int
	meta timeline.Meta
}

func (m *noiseReader) Next() bool             { m.i++; return m.i <= len(m.evs) }
func (m *noiseReader) Event() *timeline.Event { return &m.evs[m.i-1] }
func (m *noiseReader) Err() error             { return nil }
func (m *noiseReader) Meta() *timeline.Meta   { return &m.meta }
func (m *noiseReader) Close() error           { return nil }

func nSwitch(t int64, cpu, prev int32, state string, next int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedSwitch, "sched:sched_switch"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PrevPID, int64(prev))
	e.SetStr(timeline.PrevComm, "t")
	e.SetStr(timeline.PrevState, state)
	e.SetInt(timeline.NextPID, int64(next))
	e.SetStr(timeline.NextComm, "t")
	return e
}

func nRuntime(t int64, cpu, pid int32, flags int64) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedStatRuntime, "sched:sched_stat_runtime"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, "t")
	e.SetInt(timeline.CommonFlags, flags)
	e.SetInt(timeline.Runtime, 1)
	return e
}

func nWaking(t int64, cpu, waker, wakee, target int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedWaking, "sched:sched_waking"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.CommonPID, int64(waker))
	e.SetInt(timeline.PID, int64(wakee))
	e.SetStr(timeline.Comm, "t")
	e.SetInt(timeline.TargetCPU, int64(target))
	e.SetInt(timeline.CommonFlags, 1)
	return e
}

const hardirq = 0x09 // IRQS_OFF | HARDIRQ, as the tick's update_curr records

// The stall estimator through Extract, with the answer worked out by hand:
// task 10 runs on CPU 0 from 1 ms (task 20 keeps CPU 1 busy), ticks
// recorded at 4, 8, 20, 30 and 34.3 ms, a wakeup it issues at 22 ms.
//   - 4→8: on time, no stall;
//   - 8→20: the 12 ms tick was taken at 20: stall [12, 20] = 8 ms;
//   - 20→30: due at 24, but the CPU was seen running at 22 (its wakeup),
//     so the stall is [24, 30] = 6 ms;
//   - 30→34.3: 0.3 ms late, under the 0.5 ms tolerance: none.
//
// A non-IRQ update_curr (40 ms, after the switch) is no tick.
// Observed run = 4 + 12 + 10 + 4.3 = 30.3 ms; stalls 6 and 8 ms; fraction
// 14/30.3; mean stall 7 ms; every tick closed with 2 CPUs busy, and 30.3 ms
// is under the 100 ms bin minimum, so bins 1 and 2 are one group.
func TestStallEstimatorByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(500000, 1, 0, "R", 20),
		nSwitch(1*ms, 0, 0, "R", 10),
		nRuntime(4*ms, 0, 10, hardirq),
		nRuntime(8*ms, 0, 10, hardirq),
		nRuntime(20*ms, 0, 10, hardirq),
		nWaking(22*ms, 0, 10, 30, 2),
		nRuntime(30*ms, 0, 10, hardirq),
		nRuntime(34*ms+300000, 0, 10, hardirq),
		nSwitch(35*ms, 0, 10, "S", 0),
		nRuntime(40*ms, 0, 10, 1),
	}}
	w := mustExtract(t, r)
	m := w.Stalls
	if m == nil {
		t.Fatal("no stall model")
	}
	if m.ObservedNS != 30300000 || len(m.StallsNS) != 2 || m.StallsNS[0] != 6*ms || m.StallsNS[1] != 8*ms || m.MeanStallNS != 7*ms {
		t.Fatalf("got %+v", m)
	}
	want := 14.0 / 30.3
	if math.Abs(m.Fraction-want) > 1e-9 || len(m.FractionByBusy) != 2 || math.Abs(m.FractionByBusy[0]-want) > 1e-9 || math.Abs(m.FractionByBusy[1]-want) > 1e-9 {
		t.Fatalf("fraction %v by busy %v, want %v", m.Fraction, m.FractionByBusy, want)
	}
}

// Busy-count bins: 30 on-time ticks (120 ms) with one CPU busy form their
// own group (≥ 100 ms, fraction 0); then CPU 1 gets busy and CPU 0 shows
// one 12 ms gap (stall 8 ms) with 2 busy: 12 ms is a short last group, so
// it joins the first: both bins get 8 / 132.
func TestStallEstimatorBins(t *testing.T) {
	e := newStallEstimator(4 * ms)
	e.switchTo(0, 0, 10)
	e.switchTo(1, 0, 0)
	for i := int64(0); i <= 30; i++ {
		e.runtime(0, i*4*ms, 10, true)
	}
	e.switchTo(1, 121*ms, 20)
	e.runtime(0, 132*ms, 10, true)
	m := e.model()
	if m == nil || m.ObservedNS != 132*ms || len(m.StallsNS) != 1 || m.StallsNS[0] != 8*ms {
		t.Fatalf("got %+v", m)
	}
	want := 8.0 / 132
	if len(m.FractionByBusy) != 2 || math.Abs(m.FractionByBusy[0]-want) > 1e-12 || math.Abs(m.FractionByBusy[1]-want) > 1e-12 {
		t.Fatalf("by busy %v, want %v", m.FractionByBusy, want)
	}
	if m.fraction(0) != m.FractionByBusy[0] || m.fraction(9) != m.FractionByBusy[1] {
		t.Fatal("fraction() clamps to the bins")
	}

	// With 100 ms more of on-time ticks at 2 busy, the second group
	// stands alone: bin 1 is 0/120, bin 2 is 8/(12+100).
	for i := int64(1); i <= 25; i++ {
		e.runtime(0, 132*ms+i*4*ms, 10, true)
	}
	m = e.model()
	if m.FractionByBusy[0] != 0 || math.Abs(m.FractionByBusy[1]-8.0/112) > 1e-12 {
		t.Fatalf("by busy %v", m.FractionByBusy)
	}
}

// A bare-metal CPU ticks on time: no stall model at all; a switch ends a
// run (a gap across it is not measured), and a tick of another task than
// the one running is not this run's.
func TestStallEstimatorBareMetal(t *testing.T) {
	e := newStallEstimator(4 * ms)
	e.switchTo(0, 0, 10)
	for i := int64(1); i <= 100; i++ {
		e.runtime(0, i*4*ms+int64(i%3)*100000, 10, true)
	}
	e.switchTo(0, 401*ms, 11)
	e.runtime(0, 420*ms, 11, true) // first tick of the new run
	e.runtime(0, 440*ms, 12, true) // not the running task
	if m := e.model(); m != nil {
		t.Fatalf("bare metal: %+v", m)
	}
}

// The sampled process reproduces the stalled fraction it was given, and
// is the same for the same seed.
func TestStallProcessFraction(t *testing.T) {
	m := &StallModel{TickNS: 4 * ms, StallsNS: []int64{2 * ms, 6 * ms, 10 * ms}, MeanStallNS: 6 * ms, FractionByBusy: []float64{0.25, 0.6}}
	w := &Workload{Stalls: m}
	frac := func(seed uint64, busy int) float64 {
		s := &Sim{w: w, ncpu: 2, cfg: Config{IdleWake: true, Seed: seed}}
		s.cpus = []*rq{{cpu: 0}, {cpu: 1}}
		if busy == 2 {
			s.cpus[0].curr, s.cpus[1].curr = &simTask{}, &simTask{}
		}
		in := 0
		const n = 200000
		for i := int64(0); i < n; i++ {
			if s.stallEnd(1, i*100000) > i*100000 {
				in++
			}
		}
		return float64(in) / n
	}
	if f := frac(1, 2); math.Abs(f-0.6) > 0.03 {
		t.Fatalf("2 busy: stalled %.3f of the time, want 0.6", f)
	}
	if f := frac(1, 0); math.Abs(f-0.25) > 0.03 {
		t.Fatalf("idle: stalled %.3f of the time, want 0.25", f)
	}
	if frac(7, 2) != frac(7, 2) {
		t.Fatal("not deterministic")
	}
	s := &Sim{w: w, ncpu: 2, cfg: Config{IdleWake: false}}
	if s.stallEnd(0, 5) != 5 {
		t.Fatal("IdleWake off must disable stalls")
	}
}

// A stall process restarted after a stretch with no contention (f = 0)
// starts in its steady state: the restarting call falls inside a stall
// with probability f, and a stall found under way is drawn by length
// with the call uniform within it. Worked by hand for stalls of 1 and 3
// ms: the 3 ms one holds 3/4 of the stalled time, so the rest of the
// stall at the call averages 1/4 × 0.5 + 3/4 × 1.5 = 1.25 ms
// (E[L²] / 2E[L]). A restart always outside a stall (the process before
// round 141) waits at none of them.
func TestStallProcessRestartSteady(t *testing.T) {
	m := &StallModel{StallsNS: []int64{1 * ms, 3 * ms}, MeanStallNS: 2 * ms}
	const n = 40000
	const f = 0.4
	in, rest := 0, int64(0)
	for i := 0; i < n; i++ {
		p := stallProc{rng: uint64(i) * 0x632be59bd9b4e019}
		p.next(m, 0, 0) // no contention: no stall due
		at := int64(50 * ms)
		if e := p.endAt(m, at, f); e > at {
			in++
			rest += e - at
			if e-at > 3*ms {
				t.Fatalf("rest of a stall %d ns, longer than the longest stall", e-at)
			}
		}
	}
	if got := float64(in) / n; math.Abs(got-f) > 0.015 {
		t.Errorf("restarted inside a stall %.3f of the time, want %.2f", got, f)
	}
	if in == 0 {
		t.Fatal("no restart fell inside a stall")
	}
	if mean := float64(rest) / float64(in) / float64(ms); math.Abs(mean-1.25) > 0.04 {
		t.Errorf("rest of the stall under way averages %.3f ms, want 1.25", mean)
	}
}

// WF_SYNC inference: task 10 wakes 20 and is switched out 30 µs later on
// the same CPU (sync); it then wakes 30 and runs on 200 µs (not sync).
func TestSyncInference(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 40),
		nWaking(2*ms, 0, 10, 20, 0),
		nSwitch(2*ms+30000, 0, 10, "R", 20),
		nSwitch(3*ms, 0, 20, "S", 10),
		nWaking(4*ms, 0, 10, 30, 1),
		nSwitch(4*ms+200000, 0, 10, "S", 0),
	}}
	w := mustExtract(t, r)
	got := map[int32]bool{}
	for _, e := range w.Edges {
		got[w.Tasks[e.Wakee].TID] = e.Sync
	}
	if len(got) != 2 || !got[20] || got[30] {
		t.Fatalf("sync by wakee: %v", got)
	}
}

func nMigrate(t int64, cpu, pid, orig, dest int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedMigrateTask, "sched:sched_migrate_task"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, "t")
	e.SetInt(timeline.OrigCPU, int64(orig))
	e.SetInt(timeline.DestCPU, int64(dest))
	e.SetInt(timeline.CommonFlags, 1)
	return e
}

// withFlags sets an event's common_flags (0x04: TIF_NEED_RESCHED of the
// task running on its CPU).
func withFlags(e timeline.Event, f int64) timeline.Event {
	e.SetInt(timeline.CommonFlags, f)
	return e
}

// sched_waking's target_cpu is the wakee's previous CPU (read before
// select_task_rq); a sched_migrate_task of the wakee right after it on the
// waker's CPU is the placement, and the delay measurements follow it. By
// hand: 10 runs on CPU 0, 40 on CPU 1, CPU 2 goes idle. 10 wakes 20 (prev CPU
// 1) at 2 ms and places it on CPU 0 (its own); 10 is switched out R for
// 20 at 2.03 ms: a local wakeup preemption of 30 µs. 10 wakes 50 (prev
// CPU 1) at 3 ms and places it on idle CPU 2, where it runs at 3.08 ms:
// an idle exit of 80 µs. Before, both were attributed to the busy CPU 1
// and lost.
func TestDelayPoolsFollowWakeupMigration(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 40),
		nSwitch(1*ms, 2, 60, "S", 0),
		nWaking(2*ms, 0, 10, 20, 1),
		nMigrate(2*ms+5000, 0, 20, 1, 0),
		nSwitch(2*ms+30000, 0, 10, "R", 20),
		nSwitch(2*ms+500000, 0, 20, "S", 10),
		nWaking(3*ms, 0, 10, 50, 1),
		nMigrate(3*ms+5000, 0, 50, 1, 2),
		nSwitch(3*ms+80000, 2, 0, "R", 50),
		nSwitch(4*ms, 2, 50, "S", 0),
	}}
	w := mustExtract(t, r)
	if fmt.Sprint(w.PreemptWakeLocalNS) != "[30000]" || len(w.PreemptWakeNS) != 0 {
		t.Errorf("preempt delays local %v remote %v, want [30000] and none", w.PreemptWakeLocalNS, w.PreemptWakeNS)
	}
	if fmt.Sprint(w.IdleWakeNS) != "[80000]" {
		t.Errorf("idle-exit delays %v, want [80000]", w.IdleWakeNS)
	}
}

// Edge.NoPreemptNS from the trace's own TIF_NEED_RESCHED flags. By hand:
// 10 runs on CPU 0 from 1 ms. (a) It wakes 20 onto CPU 0 at 2 ms; its
// next event, waking 30 at 2.05 ms, shows NEED_RESCHED set with no tick
// between, and 10 is switched out R straight to 20 at 2.3 ms: it ran on
// 0.3 ms past the wakeup with the reschedule pending, so that edge gets
// 0.3 ms (the edge to 30, placed elsewhere, none). (b) 10, back at
// 2.5 ms, wakes 20 onto CPU 0 again at 3 ms, then blocks (S) straight to
// 20 at 3.1 ms with NEED_RESCHED shown at 3.05 ms: 0.1 ms. (c) The same
// as (a) at 5 ms, but a tick (hard-IRQ update_curr) comes at 5.02 ms
// before the first NEED_RESCHED event: the tick may have set it (a slice
// expiry), so no stretch. (d) At 7 ms a tick sets the flag (shown at
// 7.01 ms) and schedule() picks 10 again (no switch): the tick at 7.5 ms
// shows it clear. 10 wakes 20 at 8 ms, the flag is shown again at 8.05
// ms and 10 is switched out R to 20 at 8.3 ms: 0.3 ms, as (a); the flag
// of 7.01 ms, cleared since, is not this wakeup's. (e) At 10 ms the flag
// is already set when 10 wakes 20 (its sched_waking, written before the
// wakeup's check_preempt, shows it; no tick since 9.5 ms, where it was
// clear): set before the wakeup, so not this wakeup's, and no stretch.
// (f) A wake-up loop: at 12 ms 10 wakes 20 onto CPU 0 (flag clear), then
// 30 at 12.05 ms (its sched_waking shows the flag set) and 50 at 12.1 ms,
// both onto CPU 0, and is switched out R at 12.4 ms to 30, the task the
// pick chose, not 20: 20's wakeup set the flag, so its edge gets the
// 0.4 ms to the switch (30's and 50's none). (g) At 13.9 ms 40 on CPU 1
// wakes 50 onto CPU 0; at 14 ms 10 wakes 20 there, the flag is first
// shown by a record of 10's own update (no waking: nothing says a wake
// loop ran on) and 10 is switched out R at 14.3 ms to 50: the flag may
// have been set since by anything, so no stretch. (h) At 15 ms 10 wakes
// 20 onto CPU 0 and the wakeup moves it to CPU 1 (40's); 10's next
// waking, of 50 onto CPU 0 at 15.05 ms, shows the flag, and 10 is
// switched out R at 15.3 ms to 50: 20's wakeup left CPU 0 and did not set
// it, 50's came after it was set: no stretch.
func TestNoPreemptFromNeedResched(t *testing.T) {
	const nr = 0x05 // IRQS_OFF | NEED_RESCHED
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 40),
		nWaking(2*ms, 0, 10, 20, 0),
		withFlags(nWaking(2*ms+50000, 0, 10, 30, 1), nr),
		nSwitch(2*ms+300000, 0, 10, "R", 20),
		nSwitch(2*ms+500000, 0, 20, "S", 10),
		nWaking(3*ms, 0, 10, 20, 0),
		nRuntime(3*ms+50000, 0, 10, nr),
		nSwitch(3*ms+100000, 0, 10, "S", 20),
		nSwitch(4*ms, 0, 20, "S", 0),
		nSwitch(4*ms+500000, 0, 0, "R", 10),
		nWaking(5*ms, 0, 10, 20, 0),
		nRuntime(5*ms+20000, 0, 10, hardirq),
		nRuntime(5*ms+50000, 0, 10, nr),
		nSwitch(5*ms+300000, 0, 10, "R", 20),
		nSwitch(6*ms, 0, 20, "S", 10),
		nRuntime(7*ms, 0, 10, hardirq),
		nRuntime(7*ms+10000, 0, 10, nr),
		nRuntime(7*ms+500000, 0, 10, hardirq),
		nWaking(8*ms, 0, 10, 20, 0),
		nRuntime(8*ms+50000, 0, 10, nr),
		nSwitch(8*ms+300000, 0, 10, "R", 20),
		nSwitch(9*ms, 0, 20, "S", 10),
		nRuntime(9*ms+500000, 0, 10, 0x01),
		withFlags(nWaking(10*ms, 0, 10, 20, 0), nr),
		nRuntime(10*ms+50000, 0, 10, nr),
		nSwitch(10*ms+300000, 0, 10, "R", 20),
		nSwitch(11*ms, 0, 20, "S", 10),
		nWaking(12*ms, 0, 10, 20, 0),
		withFlags(nWaking(12*ms+50000, 0, 10, 30, 0), nr),
		withFlags(nWaking(12*ms+100000, 0, 10, 50, 0), nr),
		nSwitch(12*ms+400000, 0, 10, "R", 30),
		nSwitch(13*ms, 0, 30, "S", 50),
		nSwitch(13*ms+100000, 0, 50, "S", 20),
		nSwitch(13*ms+200000, 0, 20, "S", 10),
		nWaking(13*ms+900000, 1, 40, 50, 0),
		nWaking(14*ms, 0, 10, 20, 0),
		nRuntime(14*ms+50000, 0, 10, nr),
		nSwitch(14*ms+300000, 0, 10, "R", 50),
		nSwitch(14*ms+400000, 0, 50, "S", 20),
		nSwitch(14*ms+500000, 0, 20, "S", 10),
		nWaking(15*ms, 0, 10, 20, 0),
		nMigrate(15*ms+10000, 0, 20, 0, 1),
		withFlags(nWaking(15*ms+50000, 0, 10, 50, 0), nr),
		nSwitch(15*ms+300000, 0, 10, "R", 50),
		nSwitch(15*ms+400000, 0, 50, "S", 10),
		nSwitch(15*ms+500000, 1, 40, "R", 20),
		nSwitch(15*ms+600000, 1, 20, "S", 40),
	}}
	w := mustExtract(t, r)
	var got []string
	for _, e := range w.Edges {
		got = append(got, fmt.Sprintf("%d@%d:%d", w.Tasks[e.Wakee].TID, e.TimeNS/1000, e.NoPreemptNS/1000))
	}
	want := "[20@2000:300 30@2050:0 20@3000:100 20@5000:0 20@8000:300 20@10000:0 20@12000:400 30@12050:0 50@12100:0 20@14000:0 20@15000:0 50@15050:0 50@13900:0]"
	if fmt.Sprint(got) != want {
		t.Errorf("edges (wakee@µs:no-preempt µs) %v, want %s", got, want)
	}
}

// The re-pick case of TestNoPreemptFromNeedResched on a real trace:
// guest-A's schbench, CPU 1. perf's own reading of the records' flags
// (`perf script -s` with a Python handler printing common_flags): worker
// 1191 wakes the message thread 1189 there at 14.465662849 (0x1: clear),
// the next records on that CPU are at 14.478342486 and 14.485042192
// (0x2d: NEED_RESCHED, after a host stall), and 1191 is switched out R to
// 1189 at 14.485155220. An earlier flag of 1191's run, cleared by a
// schedule() that picked it again, had hidden this stretch: the edge
// carries the 19,492,371 ns from the wakeup to the switch.
func TestNoPreemptAfterRepickOnARealTrace(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	for _, e := range w.Edges {
		if e.TimeNS == 14465662849 && w.Tasks[e.Waker].TID == 1191 && w.Tasks[e.Wakee].TID == 1189 {
			if e.NoPreemptNS != 14485155220-14465662849 {
				t.Errorf("no-preempt stretch %d ns, want 19492371", e.NoPreemptNS)
			}
			return
		}
	}
	t.Fatal("no edge 1191 -> 1189 at 14.465662849")
}

// The wake-up loop case of TestNoPreemptFromNeedResched on a real trace:
// hackbench's herd on Debian's 6.12 (guest-P r2), CPU 1. perf's own
// reading of the records' flags (`perf script -s` with a Python handler
// printing common_flags): the parent 371 wakes 451 at 6.868101331 (0x1:
// clear; 451 is moved to CPU 1), the flag is set from its next waking on
// (450 at 6.868224315: 0x25), 371 goes on waking the rest of the 80
// readers and is switched out R at 6.870588076 to 421, one of the later
// wakees. 451's edge carries the 2,486,745 ns from its wakeup to that
// switch (371 ran throughout); the edges after it, none.
func TestNoPreemptWakeLoopOnARealTrace(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/v6.12/guest-P-1s2c1t/r2/hackbench.perf.data.gz")
	found := false
	for _, e := range w.Edges {
		if w.Tasks[e.Waker].TID != 371 || e.TimeNS < 6868101331 || e.TimeNS > 6870588076 {
			continue
		}
		want := int64(0)
		if e.TimeNS == 6868101331 {
			found, want = true, 6870588076-6868101331
		}
		if e.NoPreemptNS != want {
			t.Errorf("edge 371 -> %d at %d: no-preempt stretch %d ns, want %d", w.Tasks[e.Wakee].TID, e.TimeNS, e.NoPreemptNS, want)
		}
	}
	if !found {
		t.Fatal("no edge 371 -> 451 at 6.868101331")
	}
}

func withPrios(e timeline.Event, prev, next int64) timeline.Event {
	e.SetInt(timeline.PrevPrio, prev)
	e.SetInt(timeline.NextPrio, next)
	return e
}

// A task whose policy changes in the trace gets the prio it ran under the
// longest. Task 10 is forked at prio 120 (as stress-ng's cyclic stressor),
// runs 1 ms at 120, then sets SCHED_FIFO and runs 3 × 2 ms at prio 0
// (6 ms): prio 0, a real-time task. Task 20 runs 0.1 ms boosted to prio 0
// (PI) and 5 ms at 120: prio 120.
func TestExtractPrioOfLongestRun(t *testing.T) {
	fork := func(at int64, cpu, parent, child int32) timeline.Event {
		var e timeline.Event
		e.Time, e.Kind, e.Name = at, timeline.SchedWakeupNew, "sched:sched_wakeup_new"
		e.SetInt(timeline.CPU, int64(cpu))
		e.SetInt(timeline.CommonPID, int64(parent))
		e.SetInt(timeline.PID, int64(child))
		e.SetStr(timeline.Comm, "t")
		e.SetInt(timeline.Prio, 120)
		e.SetInt(timeline.TargetCPU, int64(cpu))
		return e
	}
	r := &noiseReader{evs: []timeline.Event{
		withPrios(nSwitch(1*ms, 0, 0, "R", 5), 120, 120),
		fork(1*ms+100000, 0, 5, 10),
		withPrios(nSwitch(2*ms, 0, 5, "S", 10), 120, 120),
		withPrios(nSwitch(3*ms, 0, 10, "S", 0), 120, 120),
		withPrios(nWaking(4*ms, 1, 0, 10, 0), 0, 0),
		withPrios(nSwitch(4*ms, 0, 0, "R", 10), 120, 0),
		withPrios(nSwitch(6*ms, 0, 10, "S", 0), 0, 120),
		withPrios(nSwitch(7*ms, 0, 0, "R", 10), 120, 0),
		withPrios(nSwitch(9*ms, 0, 10, "S", 0), 0, 120),
		withPrios(nSwitch(10*ms, 0, 0, "R", 10), 120, 0),
		withPrios(nSwitch(12*ms, 0, 10, "S", 0), 0, 120),
		withPrios(nSwitch(1*ms, 1, 0, "R", 20), 120, 0),
		withPrios(nSwitch(1*ms+100000, 1, 20, "R", 0), 0, 120),
		withPrios(nSwitch(2*ms, 1, 0, "R", 20), 120, 120),
		withPrios(nSwitch(7*ms, 1, 20, "S", 0), 120, 120),
	}}
	// Events in time order, as a trace gives them.
	sortEvents(r.evs)
	w := mustExtract(t, r)
	got := map[int32]int32{}
	for _, tk := range w.Tasks {
		got[tk.TID] = tk.Prio
	}
	if got[10] != 0 || got[20] != 120 || got[5] != 120 {
		t.Fatalf("prio by tid: %v", got)
	}
	for _, tk := range w.Tasks {
		if tk.TID == 10 && !tk.RT() {
			t.Fatal("task 10 not real-time")
		}
	}
}

func sortEvents(evs []timeline.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Time < evs[j-1].Time; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// The interrupt-wakeup stall fraction, by hand: CPU 0 runs task 10 (one
// 8 ms tick gap gives the model a stall). 24 interrupt wakeups of task 20
// (real-time) onto CPU 0, each at 100 ms + i·10 ms, each followed 50 µs
// later by an event; for i < 6 the next event (the switch) comes 1 ms
// after that (a 1 ms event-free stretch: stalled), else 50 µs after it.
// Wakeups 20–23 end in a switch to task 30 instead (not counted).
// Counted: 20, stalled: 6, so IRQWakeStall = 6/20, and the six 1 ms
// stretches are IRQWakeStallsNS (minIRQStalls is 5). With only 19 counted
// both stay unset, and with task 20 a CFS task none is counted.
func TestIRQWakeStallEstimate(t *testing.T) {
	rt := true
	stalled := int64(6)
	run := func(n int) *StallModel {
		e := newStallEstimator(4 * ms)
		e.switchTo(0, 0, 10)
		e.runtime(0, 4*ms, 10, true)
		e.runtime(0, 16*ms, 10, true) // stall [8, 16]
		for i := int64(0); i < int64(n)+4; i++ {
			at := 100*ms + i*10*ms
			e.event(0, at) // the sched_waking
			e.irqWake(0, at, 20, rt)
			e.runtime(0, at+50000, 10, false)
			next := int32(20)
			if i >= int64(n) {
				next = 30
			}
			gap := int64(50000)
			if i < stalled {
				gap = ms
			}
			e.switchTo(0, at+50000+gap, next)
			e.switchTo(0, at+5*ms, 10)
		}
		return e.model()
	}
	if m := run(20); m == nil || math.Abs(m.IRQWakeStall-6.0/20) > 1e-12 || !slices.Equal(m.IRQWakeStallsNS, []int64{ms, ms, ms, ms, ms, ms}) {
		t.Fatalf("got %+v, want IRQWakeStall 0.3 and six 1 ms stalls", m)
	}
	if m := run(19); m == nil || m.IRQWakeStall != 0 || m.IRQWakeStallsNS != nil {
		t.Fatalf("19 wakeups: got %+v, want IRQWakeStall 0 and no stalls of its own", m)
	}
	// Four stalled of 20: the share is measured, the lengths are too few.
	stalled = 4
	if m := run(20); m == nil || math.Abs(m.IRQWakeStall-4.0/20) > 1e-12 || m.IRQWakeStallsNS != nil {
		t.Fatalf("four stalled: got %+v, want IRQWakeStall 0.2 and no stalls of its own", m)
	}
	stalled = 6
	// The same waits of a CFS wakee are not followed: it may wait for the
	// running task's slice, so a silence says nothing of a stall.
	rt = false
	if m := run(20); m == nil || m.IRQWakeStall != 0 {
		t.Fatalf("CFS wakees: got %+v, want IRQWakeStall 0", m)
	}
}

// Lost records end the tick interval they fall in: CPU 0 runs task 10
// with ticks on time at 4 and 8 ms, records are lost, then ticks at 20 and
// 24 ms. Without the loss 8→20 would be an 8 ms stall; with it the run's
// ticks start again at 20 and 20→24 is on time: no stall at all. Lost
// records on another CPU (1) leave CPU 0's interval standing.
func TestStallEstimatorLost(t *testing.T) {
	for _, c := range []struct {
		lostCPU int32
		stalls  int
	}{{0, 0}, {-1, 0}, {1, 1}} {
		e := newStallEstimator(4 * ms)
		e.switchTo(0, 0, 10)
		e.switchTo(1, 0, 0)
		e.runtime(0, 4*ms, 10, true)
		e.runtime(0, 8*ms, 10, true)
		e.lost(c.lostCPU)
		e.runtime(0, 20*ms, 10, true)
		e.runtime(0, 24*ms, 10, true)
		n := 0
		if m := e.model(); m != nil {
			n = len(m.StallsNS)
		}
		if n != c.stalls {
			t.Errorf("lost on CPU %d: %d stalls, want %d", c.lostCPU, n, c.stalls)
		}
	}
}

// mustExtract is Extract of a hand-built trace, which must succeed.
func mustExtract(t *testing.T, r timeline.EventReader) *Workload {
	t.Helper()
	w, err := Extract(r)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The interrupt wakeups' own stalls on a real recording (guest-D r2's
// stress-ng, eight vCPUs on a two-core host), as perf's own reader of the
// trace counts them: scripts/irqstalls/check.py, a perf script Python
// handler that follows each real-time wakee woken in interrupt context
// onto the busy CPU raising it to its switch-in, reading common_flags
// from perf: 156 such wakeups ended in the wakee's switch-in, 19 across
// a silence of 0.5 ms or more, these long.
func TestIRQWakeStallsOnFixture(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/repeats/guest-D-1s8c1t/r2/stressng-mix.perf.data.gz")
	want := []int64{595506, 2254868, 2563025, 2968465, 3733128, 3813028, 3862191, 3879443, 3957780, 3966636, 4132797, 4229790, 4231223, 4253825, 4459370, 4605604, 6198611, 10566028, 10685823}
	m := w.Stalls
	if m == nil || math.Abs(m.IRQWakeStall-19.0/156) > 1e-12 || !slices.Equal(m.IRQWakeStallsNS, want) {
		t.Fatalf("stall model %+v, want IRQWakeStall 19/156 and the 19 stalls %v", m, want)
	}
	// Under half the late ticks' typical length (3.97 against 10.39 ms):
	// the draw the replay made from those (StallsNS) waited longer.
	if med, all := m.IRQWakeStallsNS[len(want)/2], m.StallsNS[len(m.StallsNS)/2]; 2*med > all {
		t.Errorf("median interrupt-wakeup stall %d ns against %d ns of all stalls: want under half", med, all)
	}
}
