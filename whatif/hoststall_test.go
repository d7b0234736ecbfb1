package whatif

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

func nPrioSwitch(t int64, cpu, prev int32, state string, next, nextPrio int32) timeline.Event {
	e := nSwitch(t, cpu, prev, state, next)
	e.SetInt(timeline.NextPrio, int64(nextPrio))
	return e
}

func nLost(t int64, cpu int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.Lost, "lost"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.LostCount, 3)
	return e
}

// Host stalls found by hand (HZ 250: T = 4 ms, tolerance 0.5 ms).
//   - CPU 0: task 10 runs from 0.5 ms; its ticks are on the grid 1 + 4k ms
//     (25 of them, 1 to 97 ms: CPU 0's own phase estimate, 1 ms). The next
//     tick record is at 108.6 ms: the ticks due at 101 and 105 were not
//     taken, so the vCPU was not running over [101, 108.6]: a stall of
//     7.6 ms at demand 100.5 ms. Ticks at 109 and 113 are on time; 10
//     wakes 20 at 114.2 ms; the next record is the 121.3 ms tick, so the
//     117 ms tick was missed: [117, 121.3], 4.3 ms at demand 116.5 ms.
//   - CPU 1: 20 runs from 114.3 ms (woken after sleeping since 2 ms: the
//     CPU's idle gap is no stall) to 130 ms with no event: under 20 tick
//     records of its own, CPU 1 takes the phase of all CPUs' (1 ms), so
//     the first tick missed is at 117: [117, 130], 13 ms at demand 2.7 ms.
//   - CPU 2: a real-time task (30, prio 50) runs 20 ms without a record
//     (no CFS tick to miss), then a CFS task (40) runs from 30 ms with a
//     lost-records mark at 32 ms: its 30 → 50 ms stretch says nothing.
//   - CPU 0 again: 4.4 ms without an event (the 121.3 ms tick to the
//     125.7 ms switch-out) is within T + tolerance: nothing.
func TestHostStallsByHand(t *testing.T) {
	var evs []timeline.Event
	evs = append(evs, nPrioSwitch(500000, 0, 0, "R", 10, 120))
	evs = append(evs, nPrioSwitch(1*ms, 1, 0, "R", 20, 120), nSwitch(2*ms, 1, 20, "S", 0))
	for k := int64(0); k < 25; k++ {
		evs = append(evs, nRuntime(1*ms+4*k*ms, 0, 10, hardirq))
	}
	evs = append(evs,
		nPrioSwitch(9*ms, 2, 0, "R", 30, 50),
		nPrioSwitch(29*ms, 2, 30, "S", 0, 120),
		nPrioSwitch(30*ms, 2, 0, "R", 40, 120),
		nLost(32*ms, 2),
		nSwitch(50*ms, 2, 40, "S", 0),
		nRuntime(108*ms+600000, 0, 10, hardirq),
		nRuntime(109*ms, 0, 10, hardirq),
		nRuntime(113*ms, 0, 10, hardirq),
		nWaking(114*ms+200000, 0, 10, 20, 1),
		nPrioSwitch(114*ms+300000, 1, 0, "R", 20, 120),
		nRuntime(121*ms+300000, 0, 10, hardirq),
		nSwitch(125*ms+700000, 0, 10, "S", 0),
		nSwitch(130*ms, 1, 20, "S", 0),
	)
	sortEvents(evs)
	w, err := Extract(&noiseReader{evs: evs})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[int32]int32{}
	for i, tk := range w.Tasks {
		idx[tk.TID] = int32(i)
	}
	want := []HostStall{
		// Busy at each stall's end: CPU 0 alone at 108.6 ms; CPUs 0 and
		// 1 at 121.3 ms; CPU 1 alone at 130 ms (CPU 0 idle from 125.7).
		{Task: idx[10], Act: 0, OffsetNS: 100*ms + 500000, LenNS: 7*ms + 600000, CPU: 0, TimeNS: 101 * ms, WallNS: 7*ms + 600000, Busy: 1},
		{Task: idx[10], Act: 0, OffsetNS: 116*ms + 500000, LenNS: 4*ms + 300000, CPU: 0, TimeNS: 117 * ms, WallNS: 4*ms + 300000, Busy: 2},
		{Task: idx[20], Act: 1, OffsetNS: 2*ms + 700000, LenNS: 13 * ms, CPU: 1, TimeNS: 117 * ms, WallNS: 13 * ms, Busy: 1},
	}
	slicesSortStalls(want)
	if !reflect.DeepEqual(w.HostStalls, want) {
		t.Fatalf("host stalls\n got %+v\nwant %+v", w.HostStalls, want)
	}
	a := w.Tasks[idx[10]].Activations[0]
	if a.StallHi-a.StallLo != 2 {
		t.Errorf("task 10's activation indexes %d stalls, want 2", a.StallHi-a.StallLo)
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}

	// Round trip through the workload file.
	back := reloadWorkload(t, w)
	if !reflect.DeepEqual(back.HostStalls, w.HostStalls) || back.Tasks[idx[20]].Activations[1].StallHi-back.Tasks[idx[20]].Activations[1].StallLo != 1 {
		t.Fatalf("read back %+v", back.HostStalls)
	}
}

func slicesSortStalls(h []HostStall) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && (h[j].Task < h[j-1].Task || h[j].Task == h[j-1].Task && h[j].OffsetNS < h[j-1].OffsetNS); j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

// Without tick records the grid is unknown: the first tick missed is taken
// as due a full period after the CPU's last event (the latest it can be).
// By hand: 10 runs from 1 to 20 ms, waking 20 at 3 ms: [7, 20], 13 ms at
// demand 6 ms. The trace records sched_stat_runtime (20's, in task
// context, before it blocks), so a busy CPU would have written one at
// every tick. A trace without any shows no ticks, and its event-free
// stretches nothing about the host: no stalls.
func TestHostStallWithoutTicks(t *testing.T) {
	for _, c := range []struct {
		name     string
		runtimes bool
		want     int // stalls of 13 ms at 6 ms of 10's demand
	}{
		{"sched_stat_runtime recorded", true, 1},
		{"no sched_stat_runtime", false, 0},
	} {
		evs := []timeline.Event{
			nSwitch(1*ms, 0, 0, "R", 10),
			nSwitch(1*ms+1, 1, 0, "R", 20),
			nSwitch(1*ms+3, 1, 20, "S", 0),
			nWaking(3*ms, 0, 10, 20, 1),
			nSwitch(20*ms, 0, 10, "S", 0),
		}
		if c.runtimes {
			evs = slices.Insert(evs, 2, nRuntime(1*ms+2, 1, 20, 0))
		}
		w, err := Extract(&noiseReader{evs: evs})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range w.HostStalls {
			if w.Tasks[h.Task].TID == 10 && h.Act == 0 && h.OffsetNS == 6*ms && h.LenNS == 13*ms {
				n++
			}
		}
		if n != c.want || len(w.HostStalls) != c.want {
			t.Errorf("%s: host stalls %+v, want %d of 13 ms at 6 ms of 10's demand", c.name, w.HostStalls, c.want)
		}
	}
}

// A wakeup preemption and a tick wait out a host stall of the running
// task's demand; an interrupt on the CPU itself does not. By hand, on one
// socket of 2 cores:
//   - the hog runs on CPU 0 from t0 (20 ms) with a host stall over its
//     demand [5, 11) ms; the waker on CPU 1 runs 6 ms and then wakes a
//     kworker pinned to CPU 0 (slept since the start: it preempts, its
//     vruntime the full sleeper credit behind). At 6 ms the hog is inside
//     the stall: the kworker switches in at 11 ms (6 ms with IdleWake off,
//     which turns the machine's noise off).
//   - the same kworker woken by a timer at 6 ms (an interrupt on CPU 0,
//     where it slept): 6 ms.
//
// And on one CPU: two hogs of 20 ms, the first running from t0 with a
// stall over [3, 9) ms. The slice is 3 ms (6 ms latency, two tasks), so
// the 4 ms tick preempts it; the vCPU takes that tick at 9 ms.
func TestHostStallDelaysPreemptionAndTick(t *testing.T) {
	wake := func(arrival bool) *Workload {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		hog := b.task("hog", 120, 0, true, CauseStart, 20*ms)
		first := CauseWake
		if arrival {
			first = CauseArrival
		}
		kw := b.task("kworker/0:1", 120, 0, false, first, ms)
		waker := b.task("waker", 120, 1, true, CauseStart, 6*ms)
		if arrival {
			b.w.Tasks[kw].Activations[0].ReleaseNS = t0 + 6*ms
		} else {
			b.edge(waker, 0, 6*ms, kw, 0)
		}
		b.w.HostStalls = []HostStall{{Task: hog, Act: 0, OffsetNS: 5 * ms, LenNS: 6 * ms}}
		return b.done(t)
	}
	cases := []struct {
		name     string
		arrival  bool
		idleWake bool
		want     int64
	}{
		{"task wakeup, stall", false, true, t0 + 11*ms},
		{"task wakeup, noise off", false, false, t0 + 6*ms},
		{"timer on the CPU", true, true, t0 + 6*ms},
	}
	for _, c := range cases {
		cfg := testConfig()
		cfg.IdleWake = c.idleWake
		_, ch := replayChecked(t, wake(c.arrival), cfg)
		r := ch.firstRunAfter(101, 0)
		if r == nil || r.start != c.want || r.cpu != 0 {
			t.Errorf("%s: kworker's run %+v, want on CPU 0 from %d", c.name, r, c.want)
		}
	}

	for _, c := range []struct {
		idleWake bool
		want     int64
	}{{true, t0 + 9*ms}, {false, t0 + 4*ms}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		a := b.task("hog-a", 120, 0, true, CauseStart, 20*ms)
		b.task("hog-b", 120, 0, false, CauseStart, 20*ms)
		b.w.HostStalls = []HostStall{{Task: a, Act: 0, OffsetNS: 3 * ms, LenNS: 6 * ms}}
		cfg := testConfig()
		cfg.IdleWake = c.idleWake
		_, ch := replayChecked(t, b.done(t), cfg)
		if len(ch.runs) == 0 || ch.runs[0].tid != 100 || ch.runs[0].end != c.want {
			t.Errorf("IdleWake %v: first run %+v, want hog-a's ending at %d", c.idleWake, ch.runs, c.want)
		}
	}
}

// A workload file's host stalls are checked like its edges.
func TestHostStallValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		h    []HostStall
	}{
		{"past the demand", []HostStall{{Task: 0, Act: 0, OffsetNS: 90, LenNS: 20}}},
		{"empty", []HostStall{{Task: 0, Act: 0, OffsetNS: 10, LenNS: 0}}},
		{"bad activation", []HostStall{{Task: 0, Act: 5, OffsetNS: 10, LenNS: 1}}},
		{"overlap", []HostStall{{Task: 0, Act: 0, OffsetNS: 10, LenNS: 10}, {Task: 0, Act: 0, OffsetNS: 15, LenNS: 1}}},
		{"unsorted", []HostStall{{Task: 0, Act: 1, OffsetNS: 10, LenNS: 10}, {Task: 0, Act: 0, OffsetNS: 15, LenNS: 1}}},
		{"negative cpu", []HostStall{{Task: 0, Act: 0, OffsetNS: 10, LenNS: 1, CPU: -1, TimeNS: 5, WallNS: 1}}},
		{"empty wall stretch", []HostStall{{Task: 0, Act: 0, OffsetNS: 10, LenNS: 1, CPU: 0, TimeNS: 5, WallNS: 0}}},
	} {
		w := tinyWorkload()
		w.HostStalls = c.h
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "host stall") {
			t.Errorf("%s: Validate: %v", c.name, err)
		}
		if err := streamWorkloadErr(t, filepath.Join(t.TempDir(), "w.arrow"), w, 10, 1); err == nil || !strings.Contains(err.Error(), "host stall") {
			t.Errorf("%s: streamed: %v", c.name, err)
		}
	}
}

// Two of LISA's public traces (Apache-2.0, in ../shared) record no
// sched_stat_runtime: the rt-app example (sched_switch alone) and a
// trace-cmd text report with sched_wakeup. Their busy CPUs' runs show no
// event for hundreds of milliseconds, which until this test were taken
// for host stalls: 61 (87 % of the demand) and 20 (95 %).
func TestNoHostStallsWithoutRuntimeRecords(t *testing.T) {
	for _, path := range []string{
		"../../shared/fixtures/public/lisa/ipynb/deprecated/tutorial/example_rtapp/trace.dat",
		"../../shared/fixtures/public/lisa/tests/assets/trace_txt/trace.txt",
	} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s: %v", path, err)
		}
		w, _ := extractFixture(t, path)
		if len(w.HostStalls) != 0 {
			t.Errorf("%s: %d host stalls, want none", path, len(w.HostStalls))
		}
	}
}
