package whatif

import (
	"fmt"
	"math"
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

// A wakeup onto an idle vCPU raised on another CPU waits for a host core;
// one raised on the idle CPU itself does not. Three CPUs: hogs on CPUs 0
// and 2 (20 ms); W, asleep on idle CPU 1, is woken at t0+5 ms (a) by hog
// 0's wakeup, (b) by its own timer. Pools: local 10 µs, uncontended
// remote 100 µs (the one pool, 50 µs, is no longer drawn); H = 2, so with
// the two hogs busy and W's vCPU wanting to run (n = 3) half the time is a
// host wait; CPU 1's host-wait process has one from t0+4 ms to t0+9 ms.
// By hand: (a) W runs at t0+9 ms + 100 µs, latency 4.1 ms; (b) at t0+5 ms
// + 10 µs, latency 10 µs (no wait: a vCPU taking its own interrupt runs).
// With the one pool both were 50 µs.
func TestRemoteIdleExitWaitsForHost(t *testing.T) {
	for _, c := range []struct {
		name   string
		remote bool
		want   int64
	}{{"remote", true, 4100000}, {"local", false, 10000}} {
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
		}
		w := b.done(t)
		w.IdleWakeNS = []int64{50000}
		w.IdleWakeLocalNS = []int64{10000}
		w.IdleWakeRemoteNS = []int64{100000}
		w.Stalls = &StallModel{TickNS: 4 * ms, FractionByBusy: []float64{0, 0, 0}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms, HostCores: 2}
		cfg := testConfig()
		cfg.IdleWake = true
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
