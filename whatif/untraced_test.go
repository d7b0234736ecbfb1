package whatif

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A task switched out on a CPU the trace shows idle, with no waking and no
// switch-in recorded for it (this project's 6.18 VM): extraction releases
// its activation when its run began and marks it untraced; a traced
// wakeup's activation is not. By hand: 10 blocks on CPU 0 at 1 ms; it
// switches out again at 3 ms with nothing between (its waking and
// switch-in lost); 30 on CPU 1 wakes 20 onto CPU 0 at 4 ms, switched in
// at 4.1 ms.
func TestUntracedArrivalExtracted(t *testing.T) {
	w, err := Extract(&noiseReader{evs: []timeline.Event{
		nSwitch(100000, 1, 0, "R", 30),
		nSwitch(1*ms, 0, 10, "S", 0),
		nSwitch(3*ms, 0, 10, "S", 0),
		nWaking(4*ms, 1, 30, 20, 0),
		nSwitch(4100000, 0, 0, "R", 20),
		nSwitch(5*ms, 0, 20, "S", 0),
		nSwitch(6*ms, 1, 30, "S", 0),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range w.Tasks {
		for j, a := range tk.Activations {
			want := tk.TID == 10 && j == 1
			if a.Untraced != want {
				t.Errorf("task %d activation %d (%s) untraced %v, want %v", tk.TID, j, a.Cause, a.Untraced, want)
			}
		}
	}
}

// The replay writes an untraced arrival's waking, and its measure leaves
// it out, as the trace's has no latency for it. By hand on one CPU: a
// hog runs 2 ms; two arrivals onto the idle CPU at 5 and 7 ms, 1 ms each,
// the second untraced: the output has both wakings, the measure one
// wakeup and one left out.
func TestUntracedArrivalLeftOutOfMeasure(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("hog", 120, 0, true, CauseStart, 2*ms)
	x := b.task("x", 120, 0, false, CauseArrival, ms)
	y := b.task("y", 120, 0, false, CauseArrival, ms)
	b.w.Tasks[x].Activations[0].ReleaseNS = t0 + 5*ms
	b.w.Tasks[y].Activations[0].ReleaseNS = t0 + 7*ms
	b.w.Tasks[y].Activations[0].Untraced = true
	got := collectKinds(timeline.SchedWaking, timeline.SchedStatRuntime)
	res, err := Replay(b.done(t), policyConfig(t, "v6.1"), Tee{newChecker(t), got})
	if err != nil {
		t.Fatal(err)
	}
	wakings := 0
	for _, e := range got.ev {
		if e.Kind == timeline.SchedWaking {
			wakings++
		}
	}
	if wakings != 2 || res.Metrics.WakeupCount != 1 || res.Metrics.WakeupsLeftOut != 1 {
		t.Errorf("output wakings %d, measured wakeups %d, left out %d; want 2, 1, 1", wakings, res.Metrics.WakeupCount, res.Metrics.WakeupsLeftOut)
	}
}

// On the real trace (fixtures/local-6.18/workloads, README): CPU 1's
// thread is never seen woken or switched in, so the trace's wakeups are
// CPU 0's and a few others (421); the replay's measure, leaving out the
// untraced arrivals, counts as many within a few per cent, where it
// counted 665 before. A workload file keeps the flags.
func TestUntracedArrivalsOnARealTrace(t *testing.T) {
	w, obs := extractFixture(t, "../fixtures/local-6.18/workloads/cyclictest-t2.perf.data")
	p, _ := LookupPolicy("latest")
	res, err := Replay(w, DefaultConfig(p), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m.WakeupsLeftOut < 200 || m.WakeupCount < obs.WakeupCount*95/100 || m.WakeupCount > obs.WakeupCount*105/100 {
		t.Errorf("replay's wakeups %d (%d left out), the trace's %d; want within 5 %%, over 200 left out", m.WakeupCount, m.WakeupsLeftOut, obs.WakeupCount)
	}
	count := func(w *Workload) (n int) {
		for _, tk := range w.Tasks {
			for _, a := range tk.Activations {
				if a.Untraced {
					n++
				}
			}
		}
		return n
	}
	if n, m := count(w), count(reloadWorkload(t, w)); n < 200 || m != n {
		t.Errorf("untraced activations %d, %d after a workload file; want the same, over 200", n, m)
	}
}
