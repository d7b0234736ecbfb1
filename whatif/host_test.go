package whatif

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The host-core estimate, by hand (HZ 250: T = 4 ms, tolerance 0.5 ms).
// CPUs 0–3 switch to CFS tasks at 1 ms and record their ticks every 4 ms
// (4, 8, … ms), CPU 0 without those due at 104 and 108: it shows no event
// from 100 to 112 ms, a host stall over [104, 112] found with 4 CPUs busy.
// CPUs 2 and 3 go idle at 600.5 ms; CPU 0 then misses 704 and 708, a stall
// found with 2 busy, which says nothing of how many the host runs once it
// is oversubscribed (hostMinBusy = 3). Run to 1,200 ms, 4 busy CPUs for
// 599.5 ms give 2,398 ms of busy CPU time, 8 ms of it stalled: the host
// ran 4 × 2,390 / 2,398 = 3.98666 of them at once on average. Stopped at
// 200 ms there are 796 ms, under 1 s (250 ticks): no estimate.
func TestHostCoresEstimate(t *testing.T) {
	run := func(end int64) *StallModel {
		var evs []timeline.Event
		for c := int32(0); c < 4; c++ {
			evs = append(evs, nPrioSwitch(1*ms, c, 0, "R", 10+c, 120))
		}
		for at := int64(4 * ms); at <= end; at += 4 * ms {
			for c := int32(0); c < 4; c++ {
				if c == 0 && (at == 104*ms || at == 108*ms || at == 704*ms || at == 708*ms) {
					continue
				}
				if c >= 2 && at >= 600*ms {
					continue
				}
				evs = append(evs, nRuntime(at, c, 10+c, hardirq))
			}
		}
		if end >= 600*ms {
			evs = append(evs, nSwitch(600*ms+500000, 2, 12, "S", 0), nSwitch(600*ms+500000, 3, 13, "S", 0))
		}
		sortEvents(evs)
		w, err := Extract(&noiseReader{evs: evs})
		if err != nil {
			t.Fatal(err)
		}
		return w.Stalls
	}
	m := run(1200 * ms)
	if want := 4 * 2390.0 / 2398; m == nil || math.Abs(m.HostCores-want) > 1e-9 {
		t.Fatalf("host cores %+v, want %.5f", m, want)
	}
	if m := run(200 * ms); m == nil || m.HostCores != 0 {
		t.Fatalf("200 ms observed: host cores %+v, want none", m)
	}
}

// hostWaitFraction by hand with H = 2.5: the sending vCPU holds one core,
// so 1.5 are left for the other n − 1: none wait at n = 2 (1.5 ≥ 1), a
// quarter at n = 3, 1 − 1.5/7 at n = 8; without an estimate none.
func TestHostWaitFraction(t *testing.T) {
	m := &StallModel{HostCores: 2.5}
	for _, c := range []struct {
		n    int
		want float64
	}{{1, 0}, {2, 0}, {3, 0.25}, {8, 1 - 1.5/7}} {
		if got := m.hostWaitFraction(c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("n=%d: %v, want %v", c.n, got, c.want)
		}
	}
	if (&StallModel{}).hostWaitFraction(8) != 0 {
		t.Error("no HostCores: no wait")
	}
	// The host-wait process reproduces the fraction (6 of 8 wanting to
	// run wait with H = 2.5 → 1 − 1.5/7) and is deterministic.
	w := &Workload{Stalls: &StallModel{HostCores: 2.5, StallsNS: []int64{2 * ms, 6 * ms}, MeanStallNS: 4 * ms}}
	frac := func(seed uint64) float64 {
		s := &Sim{w: w, ncpu: 2, cfg: Config{IdleWake: true, Seed: seed}}
		in := 0
		const n = 200000
		for i := int64(0); i < n; i++ {
			if s.hostEnd(1, i*100000, 8) > i*100000 {
				in++
			}
		}
		return float64(in) / n
	}
	if f := frac(3); math.Abs(f-(1-1.5/7)) > 0.03 || f != frac(3) {
		t.Fatalf("stalled %.3f of the time, want %.3f, deterministic", f, 1-1.5/7)
	}
}

func nIRQWaking(t int64, cpu, wakee, target int32) timeline.Event {
	e := nWaking(t, cpu, 0, wakee, target)
	e.SetInt(timeline.CommonFlags, hardirq)
	return e
}

// The extractor's idle-exit pools, by hand. Task 10 runs on CPU 0 (1
// busy), CPUs 1–3 go idle at 1 ms. (a) 10 wakes 20 onto idle CPU 1 at 2 ms, switched in at 2.1 ms:
// raised elsewhere with 1 CPU busy, 100 µs in the remote pool. (b) A
// timer on idle CPU 2 wakes 30 there at 3 ms, in at 3.05 ms: raised on
// the idle CPU itself, 50 µs in the local pool. (c) With 10, 20 and 30
// running (3 busy), 10 wakes 40 onto idle CPU 3 at 5 ms, in at 8 ms: the
// host was contended, so only the one pool has its 3 ms.
func TestIdleWakePoolsSplit(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 61, "S", 0),
		nSwitch(1*ms, 2, 62, "S", 0),
		nSwitch(1*ms, 3, 63, "S", 0),
		nWaking(2*ms, 0, 10, 20, 1),
		nSwitch(2*ms+100000, 1, 0, "R", 20),
		nIRQWaking(3*ms, 2, 30, 2),
		nSwitch(3*ms+50000, 2, 0, "R", 30),
		nWaking(5*ms, 0, 10, 40, 3),
		nSwitch(8*ms, 3, 0, "R", 40),
		nSwitch(9*ms, 3, 40, "S", 0),
	}}
	w := mustExtract(t, r)
	if fmt.Sprint(w.IdleWakeNS) != "[50000 100000 3000000]" {
		t.Errorf("idle-exit delays %v", w.IdleWakeNS)
	}
	if fmt.Sprint(w.IdleWakeLocalNS) != "[50000]" || fmt.Sprint(w.IdleWakeRemoteNS) != "[100000]" {
		t.Errorf("local %v remote %v, want [50000] and [100000]", w.IdleWakeLocalNS, w.IdleWakeRemoteNS)
	}
}

func nWakeupNew(t int64, cpu, parent, child, target int32) timeline.Event {
	e := nWaking(t, cpu, parent, child, target)
	e.Kind, e.Name = timeline.SchedWakeupNew, "sched:sched_wakeup_new"
	return e
}

// A fork's idle exit is kept in its own pool as well, by hand. Task 10
// runs on CPU 0; CPU 1 goes idle at 1 ms. (a) 10 forks 20 onto idle CPU
// 1 at 2 ms, switched in at 2.1 ms, 20 blocks at 2.5 ms; (b) 10 wakes 20
// there again at 4 ms, in at 4.25 ms. Both are idle exits (100 and
// 250 µs), the first a fork's.
func TestIdleWakeForkPool(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 61, "S", 0),
		nFork(2*ms, 0, 10, 20),
		nWakeupNew(2*ms, 0, 10, 20, 1),
		nSwitch(2*ms+100000, 1, 0, "R", 20),
		nSwitch(2*ms+500000, 1, 20, "S", 0),
		nWaking(4*ms, 0, 10, 20, 1),
		nSwitch(4*ms+250000, 1, 0, "R", 20),
		nSwitch(5*ms, 1, 20, "S", 0),
	}}
	w := mustExtract(t, r)
	if fmt.Sprint(w.IdleWakeNS) != "[100000 250000]" || fmt.Sprint(w.IdleWakeForkNS) != "[100000]" {
		t.Errorf("idle exits %v, the forks' %v; want [100000 250000] and [100000]", w.IdleWakeNS, w.IdleWakeForkNS)
	}
}

// A wakeup onto an idle vCPU raised on another CPU waits for a host core;
// one raised on the idle CPU itself does not. Three CPUs: hogs on CPUs 0
// and 2 (20 ms); W, asleep on idle CPU 1, is woken at t0+5 ms (a) by hog
// 0's wakeup, (b) by its own timer. Pools: local 10 µs, uncontended
// remote 100 µs (the one pool, 50 µs, is no longer drawn); H = 2, so with
// the two hogs busy and W's vCPU wanting to run (n = 3) half the time is a
// host wait; CPU 1's host-wait process has one from t0+4 ms to t0+9 ms.
// By hand: (a) W runs at t0+9 ms + 100 µs, latency 4.1 ms; (b) at t0+5 ms
// + 10 µs, latency 10 µs (no wait: a vCPU taking its own interrupt runs).
// With the one pool both were 50 µs. (c) an interrupt on CPU 0 wakes W
// (Activation.IRQCPUPlus1, RCU's kthread woken from another CPU's
// softirq): placed as its own timer's (irq_cpu=own), but its IPI finds
// CPU 1's vCPU as a task's wakeup does (irq_ipi, the default): 4.1 ms;
// without irq_ipi as (b).
func TestRemoteIdleExitWaitsForHost(t *testing.T) {
	for _, c := range []struct {
		name        string
		remote, ipi bool
		irqCPU1     int16
		want        int64
	}{{"remote", true, true, 0, 4100000}, {"local", false, true, 0, 10000},
		{"interrupt elsewhere", false, true, 1, 4100000}, {"interrupt elsewhere, irq_ipi off", false, false, 1, 10000}} {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		h0 := b.task("hog0", 120, 0, true, CauseStart, 20*ms)
		b.task("hog2", 120, 2, true, CauseStart, 20*ms)
		cause := CauseArrival
		if c.remote {
			cause = CauseWake
		}
		wt := b.task("w", 120, 1, false, cause, ms)
		if c.remote {
			b.edge(h0, 0, 5*ms, wt, 0)
		} else {
			b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 5*ms
			b.w.Tasks[wt].Activations[0].IRQCPUPlus1 = c.irqCPU1
		}
		w := b.done(t)
		w.IdleWakeNS = []int64{50000}
		w.IdleWakeLocalNS = []int64{10000}
		w.IdleWakeRemoteNS = []int64{100000}
		w.Stalls = &StallModel{TickNS: 4 * ms, FractionByBusy: []float64{0, 0, 0}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms, HostCores: 2}
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.IRQIPI = c.ipi
		s, ch := newSim(t, w, cfg)
		far := int64(math.MaxInt64 / 2)
		s.hostStall = []stallProc{{start: far, end: far}, {start: t0 + 4*ms, end: t0 + 9*ms}, {start: far, end: far}}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		wTID := int64(w.Tasks[wt].TID)
		ran := false
		for _, r := range ch.runs {
			if r.tid == wTID && !ran {
				ran = true
				if r.cpu != 1 {
					t.Errorf("%s: W ran on CPU %d, want its idle CPU 1", c.name, r.cpu)
				}
				if got := r.start - (t0 + 5*ms); got != c.want {
					t.Errorf("%s: W switched in %d ns after its wakeup, want %d", c.name, got, c.want)
				}
			}
		}
		if !ran {
			t.Fatalf("%s: W never ran", c.name)
		}
	}
}

// busyHostWaitFraction by hand with H = 2.5: at n = 8 busy the contention
// stalls f = 1 − 1.5/7 of the IPIs; the running task's own stalls, 30 % of
// busy time measured at that count, catch that share, so (f − 0.3)/0.7 of
// the rest wait. At n = 3, f = 0.25 is under the measured 0.3: none; at
// n = 2 the host has a core (f = 0); without an estimate none.
func TestBusyHostWaitFraction(t *testing.T) {
	m := &StallModel{HostCores: 2.5, FractionByBusy: []float64{0, 0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3}}
	f8 := 1 - 1.5/7
	for _, c := range []struct {
		n    int
		want float64
	}{{8, (f8 - 0.3) / 0.7}, {3, 0}, {2, 0}, {1, 0}} {
		if got := m.busyHostWaitFraction(c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("n=%d: %v, want %v", c.n, got, c.want)
		}
	}
	if (&StallModel{FractionByBusy: m.FractionByBusy}).busyHostWaitFraction(8) != 0 {
		t.Error("no HostCores: no wait")
	}
}

// A wakeup preemption sent to a busy vCPU from another waits for a host
// core (busyHostEnd), outside the running task's own host stalls. Three
// CPUs busy with hogs; kworker/1:1 (pinned to CPU 1, asleep) is woken at
// t0+5 ms by hog 0's wakeup, and preempts hog 1 (5 ms of vruntime ahead;
// no delay pool, so the switch would be at once). H = 2 and 20 % of busy
// time stalled with 3 busy: a share 0.375 of such IPIs wait; CPU 1's
// busy host-wait process is stalled over [t0+4, t0+7.5) ms. By hand:
// (a) on, the switch waits for that stall: t0+7.5 ms; (b) off: t0+5 ms;
// (c) hog 1 in a host stall of its own demand over [4.5, 7) ms: that
// stall's end, t0+7 ms, the process not consulted; (d) woken by hog 1
// itself, on CPU 1 (no IPI: the waker's vCPU runs): t0+5 ms; (e) by its
// own timer there: t0+5 ms. The next tick that could preempt hog 1 is at
// t0+8 ms.
func TestRemotePreemptWaitsForHost(t *testing.T) {
	for _, c := range []struct {
		name             string
		on, local, timer bool
		ownStall         bool
		wantStart        int64
	}{
		{"remote, on", true, false, false, false, t0 + 7500000},
		{"remote, off", false, false, false, false, t0 + 5*ms},
		{"remote, in the task's own stall", true, false, false, true, t0 + 7*ms},
		{"local, on", true, true, false, false, t0 + 5*ms},
		{"own timer, on", true, false, true, false, t0 + 5*ms},
	} {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		h0 := b.task("hog0", 120, 0, true, CauseStart, 20*ms)
		h1 := b.task("hog1", 120, 1, true, CauseStart, 20*ms)
		b.task("hog2", 120, 2, true, CauseStart, 20*ms)
		cause := CauseWake
		if c.timer {
			cause = CauseArrival
		}
		kw := b.task("kworker/1:1", 120, 1, false, cause, ms)
		switch {
		case c.timer:
			b.w.Tasks[kw].Activations[0].ReleaseNS = t0 + 5*ms
		case c.local:
			b.edge(h1, 0, 5*ms, kw, 0)
		default:
			b.edge(h0, 0, 5*ms, kw, 0)
		}
		if c.ownStall {
			b.w.HostStalls = []HostStall{{Task: h1, Act: 0, OffsetNS: 4500000, LenNS: 2500000}}
		}
		w := b.done(t)
		w.Stalls = &StallModel{TickNS: 4 * ms, FractionByBusy: []float64{0, 0, 0.2}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms, HostCores: 2}
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.BusyHostWait = c.on
		s, ch := newSim(t, w, cfg)
		far := int64(math.MaxInt64 / 2)
		s.busyHost = []stallProc{{start: far, end: far}, {start: t0 + 4*ms, end: t0 + 7500000}, {start: far, end: far}}
		res, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		r := ch.firstRunAfter(int64(w.Tasks[kw].TID), 0)
		if r == nil || r.cpu != 1 || r.start != c.wantStart {
			t.Errorf("%s: kworker's run %+v, want on CPU 1 from %d", c.name, r, c.wantStart)
		}
		// The stats count the wait: one of 2.5 ms where the process held it.
		wantN, wantNS := int64(0), int64(0)
		if c.name == "remote, on" {
			wantN, wantNS = 1, 2500000
		}
		if res.BusyHostWaits != wantN || res.BusyHostWaitNS != wantNS {
			t.Errorf("%s: busy host waits %d, %d ns; want %d, %d ns", c.name, res.BusyHostWaits, res.BusyHostWaitNS, wantN, wantNS)
		}
	}
}

// While a reschedule is held for a host core the vCPU is descheduled: its
// task fires no wakeup before the switch (its demand still passes). As
// above, kworker/1:1 is woken at t0+5 ms by hog 0 and preempts hog 1,
// the IPI held until t0+7.5 ms; hog 1 wakes kworker/3:1 at 6 ms of its
// work. By hand: on, hog 1 runs to t0+7.5 ms with that wakeup held, the
// kworker runs 1 ms, and hog 1, back at t0+8.5 ms, wakes kworker/3:1 at
// once. Off: the switch at t0+5 ms, hog 1 back at t0+6 ms reaches 6 ms of
// work at t0+7 ms. (Taking the wakeup as the sign that the vCPU ran, and
// switching there, would switch at t0+6 ms and wake at t0+7 ms.)
func TestHostHeldTaskFiresNoWakeup(t *testing.T) {
	for _, c := range []struct {
		on                bool
		wantWake, wantOut int64
	}{{true, t0 + 8500000, t0 + 7500000}, {false, t0 + 7*ms, t0 + 5*ms}} {
		b := newBuilder(t, "sockets=1,cores=4,threads=1")
		h0 := b.task("hog0", 120, 0, true, CauseStart, 20*ms)
		h1 := b.task("hog1", 120, 1, true, CauseStart, 20*ms)
		b.task("hog2", 120, 2, true, CauseStart, 20*ms)
		kw := b.task("kworker/1:1", 120, 1, false, CauseWake, ms)
		x := b.task("kworker/3:1", 120, 3, false, CauseWake, ms)
		b.edge(h0, 0, 5*ms, kw, 0)
		b.edge(h1, 0, 6*ms, x, 0)
		w := b.done(t)
		w.Stalls = &StallModel{TickNS: 4 * ms, FractionByBusy: []float64{0, 0, 0.2, 0.2}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms, HostCores: 2}
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.BusyHostWait = c.on
		var log eventLog
		s, err := New(w, cfg, &log)
		if err != nil {
			t.Fatal(err)
		}
		far := int64(math.MaxInt64 / 2)
		s.busyHost = []stallProc{{start: far, end: far}, {start: t0 + 4*ms, end: t0 + 7500000}, {start: far, end: far}, {start: far, end: far}}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		var wake, out int64 = -1, -1
		for _, e := range log {
			switch {
			case e.Kind == timeline.SchedWaking && e.Int(timeline.PID) == int64(w.Tasks[x].TID) && wake < 0:
				wake = e.Time
			case e.Kind == timeline.SchedSwitch && e.Int(timeline.PrevPID) == int64(w.Tasks[h1].TID) && out < 0:
				out = e.Time
			}
		}
		if wake != c.wantWake || out != c.wantOut {
			t.Errorf("on %v: hog 1 switched out at %d and woke kworker/3:1 at %d, want %d and %d", c.on, out, wake, c.wantOut, c.wantWake)
		}
	}
}

// idle_exit=split by hand. Two CPUs; parent P runs on CPU 0, forks C at
// 1 ms (onto idle CPU 1: the fork balancer's idlest), C runs 0.5 ms and
// sleeps; P wakes it at 5 ms, onto its idle CPU 1 again (wake_affine_idle:
// CPU 0 is busy, C's own CPU idle). Split, with 8 idle exits of 200 µs
// and 8 forks' of 30 µs in the pool (Workload.IdleWakeNS, the forks also
// in IdleWakeForkNS, as extraction keeps them), the fork's idle exit is
// 30 µs and the wakeup's 200 µs, the rest of the pool. From the one pool
// (the default) both are drawn from IdleWakeNS, here 200 µs alone; with 7
// fork samples the forks' class is too small to draw from alone: 200 µs.
func TestIdleExitSplit(t *testing.T) {
	rep := func(n int, d int64) []int64 { return slices.Repeat([]int64{d}, n) }
	for _, c := range []struct {
		name           string
		split          bool
		idle, forks    []int64
		wantFork, want int64
	}{
		{"split", true, append(rep(8, 30000), rep(8, 200000)...), rep(8, 30000), 30000, 200000},
		{"pool", false, rep(8, 200000), rep(8, 30000), 200000, 200000},
		{"split, 7 forks", true, rep(8, 200000), rep(7, 30000), 200000, 200000},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		p := b.task("p", 120, 0, true, CauseStart, 10*ms)
		ch := b.task("c", 120, 0, false, CauseFork, 500000, 500000)
		b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms, Wakee: ch, WakeeAct: 0})
		b.edge(p, 0, 5*ms, ch, 1)
		w := b.done(t)
		w.IdleWakeNS, w.IdleWakeForkNS = c.idle, c.forks
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.IdleExitSplit = c.split
		s, out := newSim(t, w, cfg)
		if !slices.Equal(s.idleWakePool, rep(8, 200000)) {
			t.Errorf("%s: a wakeup's pool %v, want the 8 of 200 µs", c.name, s.idleWakePool)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		var starts []int64
		for _, r := range out.runs {
			if r.tid == int64(w.Tasks[ch].TID) {
				if r.cpu != 1 {
					t.Errorf("%s: C ran on CPU %d, want the idle CPU 1", c.name, r.cpu)
				}
				starts = append(starts, r.start)
			}
		}
		if len(starts) != 2 {
			t.Fatalf("%s: C ran %d times, want 2", c.name, len(starts))
		}
		if got := starts[0] - (t0 + ms); got != c.wantFork {
			t.Errorf("%s: C switched in %d ns after its fork, want %d", c.name, got, c.wantFork)
		}
		if got := starts[1] - (t0 + 5*ms); got != c.want {
			t.Errorf("%s: C switched in %d ns after its wakeup, want %d", c.name, got, c.want)
		}
	}
}

// sortedMinus takes each of b's samples out of a once.
func TestSortedMinus(t *testing.T) {
	for _, c := range []struct{ a, b, want []int64 }{
		{[]int64{1, 2, 2, 3, 5}, []int64{2, 5}, []int64{1, 2, 3}},
		{[]int64{1, 2, 2, 3}, []int64{2, 2, 2}, []int64{1, 3}},
		{[]int64{4, 6}, []int64{1, 5, 9}, []int64{4, 6}},
		{[]int64{4, 6}, nil, []int64{4, 6}},
		{nil, []int64{1}, []int64{}},
	} {
		if got := sortedMinus(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("sortedMinus(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
