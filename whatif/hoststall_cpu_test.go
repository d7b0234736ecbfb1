package whatif

import (
	"reflect"
	"strings"
	"testing"
)

// The stalls come out of the demand, the points after them move back by
// what went before, and the per-CPU stretches are sorted and merged.
// By hand: an activation of 20 ms with stalls over its demand [5, 8) and
// [10, 12) ms.
//   - demand 20 − 3 − 2 = 15 ms;
//   - an edge at 4 ms stays at 4; one at 6 ms (inside the first stall)
//     moves to its start, 5; one at 12 ms to 12 − 5 = 7;
//   - the edge at 4 ms with a no-preemption stretch to 12 ms: [4, 7), 3 ms.
//   - wall stretches: CPU 0 [100, 103) and [102, 104) merge into
//     [100, 104); CPU 1 [50, 51); a stall on CPU 5 of a 2-CPU replay is
//     dropped.
func TestWithStallsOnCPUs(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	a := b.task("a", 120, 0, true, CauseStart, 20*ms)
	o := b.task("other", 120, 1, false, CauseWake, ms, ms, ms)
	b.edge(a, 0, 4*ms, o, 0)
	b.edge(a, 0, 6*ms, o, 1)
	b.edge(a, 0, 12*ms, o, 2)
	b.w.Edges[0].NoPreemptNS = 8 * ms
	b.w.HostStalls = []HostStall{
		{Task: a, Act: 0, OffsetNS: 5 * ms, LenNS: 3 * ms, CPU: 0, TimeNS: 100 * ms, WallNS: 3 * ms},
		{Task: a, Act: 0, OffsetNS: 10 * ms, LenNS: 2 * ms, CPU: 0, TimeNS: 102 * ms, WallNS: 2 * ms},
		{Task: o, Act: 1, OffsetNS: 0, LenNS: ms / 2, CPU: 1, TimeNS: 50 * ms, WallNS: ms},
		{Task: o, Act: 2, OffsetNS: 0, LenNS: ms / 2, CPU: 5, TimeNS: 60 * ms, WallNS: ms},
	}
	w := b.done(t)
	c, spans, err := w.withStallsOnCPUs(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tasks[a].Activations[0].DemandNS; got != 15*ms {
		t.Errorf("demand %d, want 15 ms", got)
	}
	if got := c.Tasks[o].Activations[1].DemandNS; got != ms/2 {
		t.Errorf("other's demand %d, want 0.5 ms", got)
	}
	var offs []int64
	for _, e := range c.Edges {
		offs = append(offs, e.OffsetNS)
	}
	if !reflect.DeepEqual(offs, []int64{4 * ms, 5 * ms, 7 * ms}) || c.Edges[0].NoPreemptNS != 3*ms {
		t.Errorf("edges %+v, want offsets 4, 5, 7 ms and a 3 ms stretch on the first", c.Edges)
	}
	if len(c.HostStalls) != 0 || c.Tasks[a].Activations[0].StallHi != 0 {
		t.Errorf("stalls left in the demand: %+v", c.HostStalls)
	}
	want := [][]stallSpan{{{100 * ms, 104 * ms}}, {{50 * ms, 51 * ms}}}
	if !reflect.DeepEqual(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	// The input is untouched.
	if w.Tasks[a].Activations[0].DemandNS != 20*ms || w.Edges[2].OffsetNS != 12*ms || len(w.HostStalls) != 4 {
		t.Error("the workload itself changed")
	}
	// A stall without its wall-clock time (an old workload file) cannot
	// be left on a CPU.
	w.HostStalls[0].TimeNS = 0
	if _, _, err := w.withStallsOnCPUs(2); err == nil || !strings.Contains(err.Error(), "wall-clock") {
		t.Errorf("stall without a time: %v", err)
	}
}

// The wall-clock arithmetic of a CPU with stalls over [10, 20) and
// [30, 35), by hand.
func TestStallSpanArithmetic(t *testing.T) {
	r := &rq{stalls: []stallSpan{{10, 20}, {30, 35}}}
	for _, c := range []struct{ from, to, want int64 }{
		{0, 40, 25}, {15, 32, 10}, {0, 10, 10}, {20, 30, 10}, {12, 18, 0}, {5, 5, 0},
	} {
		if got := r.workIn(c.from, c.to); got != c.want {
			t.Errorf("workIn(%d, %d) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	for _, c := range []struct{ from, work, want int64 }{
		{0, 10, 10}, {0, 11, 21}, {0, 20, 30}, {0, 21, 36}, {12, 1, 21}, {12, 0, 12}, {40, 3, 43},
	} {
		if got := r.timeForWork(c.from, c.work); got != c.want {
			t.Errorf("timeForWork(%d, %d) = %d, want %d", c.from, c.work, got, c.want)
		}
	}
	for _, c := range []struct{ at, want int64 }{{5, 5}, {10, 20}, {12, 20}, {20, 20}, {34, 35}} {
		if got := r.stallEnd(c.at); got != c.want {
			t.Errorf("stallEnd(%d) = %d, want %d", c.at, got, c.want)
		}
	}
	// The cursor passes the stalls over before the last charge only.
	r.currStart = 25
	if got := r.workIn(25, 40); got != 10 || r.stallIdx != 1 {
		t.Errorf("from 25: workIn %d (cursor %d), want 10 (cursor 1)", got, r.stallIdx)
	}
}

// A stall left on its CPU stops whatever the replay runs there. By hand,
// on one socket of 2 cores: task a (10 ms, a stall over its demand
// [2, 6) ms that the trace shows on CPU 1 over t0 + [2, 6) ms) runs on
// CPU 0 from t0, hog b (10 ms) on CPU 1. a wakes a kworker pinned to CPU
// 1 (1 ms, slept since the start: it preempts b) at 7 ms of its demand.
//   - host_stall=task: a ends at 10 ms, the kworker switches in at 7 ms;
//     b, preempted for 1 ms, ends at 11 ms.
//   - host_stall=cpu: a's demand is 6 ms, its wakeup at 3 ms of it, at
//     t0 + 3 ms, inside CPU 1's stall: the kworker switches in at its end,
//     6 ms. b ran 2 ms by the stall, 1 ms kworker, the other 8 ms from 7:
//     it ends at 15 ms; a at 6 ms.
//   - host_stall=cpu with nothing on CPU 1 but the kworker: the stall
//     falls on an idle vCPU and costs nothing; the kworker runs at 3 ms.
func TestHostStallOnCPU(t *testing.T) {
	for _, c := range []struct {
		name          string
		onCPU, hog    bool
		aEnd, kwStart int64
		hogEnd        int64
	}{
		{"task", false, true, 10 * ms, 7 * ms, 11 * ms},
		{"cpu", true, true, 6 * ms, 6 * ms, 15 * ms},
		{"cpu, CPU 1 idle", true, false, 6 * ms, 3 * ms, 0},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		a := b.task("a", 120, 0, true, CauseStart, 10*ms)
		kw := b.task("kworker/1:1", 120, 1, false, CauseWake, ms)
		if c.hog {
			b.task("b", 120, 1, true, CauseStart, 10*ms)
		}
		b.edge(a, 0, 7*ms, kw, 0)
		b.w.HostStalls = []HostStall{{Task: a, Act: 0, OffsetNS: 2 * ms, LenNS: 4 * ms, CPU: 1, TimeNS: t0 + 2*ms, WallNS: 4 * ms}}
		cfg := testConfig()
		cfg.IdleWake = true // the stall model (no delay pools: no other noise)
		cfg.HostStallCPU = c.onCPU
		_, ch := replayChecked(t, b.done(t), cfg)
		end := func(tid int64) int64 {
			e := int64(-1)
			for _, r := range ch.runs {
				if r.tid == tid {
					e = r.end
				}
			}
			return e
		}
		if got := end(100); got != t0+c.aEnd {
			t.Errorf("%s: a ends at %d, want t0 + %d", c.name, got-t0, c.aEnd)
		}
		if r := ch.firstRunAfter(101, 0); r == nil || r.cpu != 1 || r.start != t0+c.kwStart {
			t.Errorf("%s: kworker's run %+v, want on CPU 1 from t0 + %d", c.name, r, c.kwStart)
		}
		if c.hog {
			if got := end(102); got != t0+c.hogEnd {
				t.Errorf("%s: b ends at t0 + %d, want t0 + %d", c.name, got-t0, c.hogEnd)
			}
		}
	}
}
