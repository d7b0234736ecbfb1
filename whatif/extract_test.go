package whatif

import (
	"cmp"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// A switch-in the trace lost (some kernels leave the switch out of idle
// untraced): the run it began is charged from the CPU's last recorded
// switch, not from the wakeup, as perf sched timehist does. By hand: 10
// runs on CPU 0 and wakes 20 (asleep since 2 ms) onto CPU 1 at 3 ms; CPU
// 1 then runs 30 from 3.2 to 3.5 ms and idles; 20's switch-in is lost and
// its switch-out comes at 4 ms. 20 can have run only since 3.5 ms: its
// second activation's demand is 0.5 ms (counting from the wakeup would
// charge it 30's run and the idle time too: 1 ms).
func TestLostSwitchInChargedFromCPUsLastSwitch(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(500000, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 20),
		nSwitch(2*ms, 1, 20, "S", 0),
		nWaking(3*ms, 0, 10, 20, 1),
		nSwitch(3*ms+200000, 1, 0, "R", 30),
		nSwitch(3*ms+500000, 1, 30, "S", 0),
		nSwitch(4*ms, 1, 20, "S", 0),
		nSwitch(5*ms, 0, 10, "S", 0),
	}}
	w := mustExtract(t, r)
	for _, tk := range w.Tasks {
		if tk.TID != 20 {
			continue
		}
		if len(tk.Activations) != 2 {
			t.Fatalf("task 20: %d activations, want 2", len(tk.Activations))
		}
		if d := tk.Activations[1].DemandNS; d != 500000 {
			t.Errorf("task 20's woken activation: demand %d ns, want 500000", d)
		}
		if d := tk.Activations[0].DemandNS; d != 1*ms {
			t.Errorf("task 20's first activation: demand %d ns, want 1 ms", d)
		}
		return
	}
	t.Fatal("task 20 not extracted")
}

// Switches the trace lost, inferred from a wakeup issued from the task's
// context on a CPU the trace shows idle (a) or running another task (b)
// (a 6.18 guest here leaves many untraced). By hand, in each: 10 runs from
// 0.5 to 0.8 ms on CPU 0 and blocks; 20 on CPU 1 wakes it onto CPU 0 at
// 2 ms; 10 wakes 30 from CPU 0 at 3 ms and blocks at 4 ms.
//
//   - (a) CPU 0 idles from 0.8 ms: 10 ran there since its wakeup at 2 ms,
//     so its second activation's demand is 2 ms, and its wakeup of 30 is
//     a causal edge (not an arrival of 30).
//
//   - (b) 40 runs on CPU 0 from 1 ms and resumes after 10 blocks at 4 ms,
//     blocking at 5 ms: its switch-out at 10's inferred switch-in (2 ms)
//     was lost too, so 40 ran 1 ms, waited, and ran 1 ms more: one
//     activation of 2 ms.
//
//   - (c) as (b) without 10's wakeup of 30: the switches are inferred from
//     10's own switch-out on CPU 0 at 4 ms (its run charged from its
//     wakeup at 2 ms, 40's until then).
//
// Neither wakeup of 10 gives an idle-exit delay (its switch-in is not in
// the trace).
// perf records the sample of a task past exit_notify with pid -1 (perf
// script prints ":-1 -1"): a child's last wakeup of its parent comes from
// "-1" on the CPU the child runs on (found in a repeat recording of
// guest-P's stress-ng, FIDELITY.md round 49). The waker is the exiting
// task the switches show there, not a task -1 running since the trace
// began (which held CPU 0 for the whole replay).
func TestExitingWakerSampleUnresolved(t *testing.T) {
	evs := []timeline.Event{
		nSwitch(500000, 0, 0, "R", 10),
		nSwitch(600000, 1, 0, "R", 20), nSwitch(800000, 1, 20, "S", 0),
		nWaking(2*ms, 0, -1, 20, 1),
		nSwitch(2100000, 0, 10, "X", 0),
		nSwitch(2200000, 1, 0, "R", 20), nSwitch(3*ms, 1, 20, "S", 0),
	}
	w, err := Extract(&noiseReader{evs: evs})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[int32]int{}
	for i, tk := range w.Tasks {
		idx[tk.TID] = i
	}
	if _, ok := idx[-1]; ok {
		t.Errorf("a task -1 was extracted: %+v", w.Tasks[idx[-1]])
	}
	causal := false
	for _, e := range w.Edges {
		if e.Waker == int32(idx[10]) && e.Wakee == int32(idx[20]) {
			causal = e.Causal
		}
	}
	twenty := w.Tasks[idx[20]].Activations
	if !causal || len(twenty) != 2 || twenty[1].Cause != CauseWake {
		t.Errorf("the exiting 10's wakeup of 20 is not its causal edge (causal %v, 20's activations %+v)", causal, twenty)
	}
}

func TestLostSwitchInferredFromWakeup(t *testing.T) {
	for _, c := range []struct {
		name   string
		evs    []timeline.Event
		want40 int64
	}{
		{"idle", []timeline.Event{
			nSwitch(500000, 0, 0, "R", 10), nSwitch(800000, 0, 10, "S", 0),
			nSwitch(900000, 1, 0, "R", 20),
			nWaking(2*ms, 1, 20, 10, 0),
			nWaking(3*ms, 0, 10, 30, 1),
			nSwitch(4*ms, 0, 10, "S", 0),
			nSwitch(6*ms, 1, 20, "S", 30), nSwitch(7*ms, 1, 30, "S", 0),
		}, 0},
		{"busy", []timeline.Event{
			nSwitch(500000, 0, 0, "R", 10), nSwitch(800000, 0, 10, "S", 0),
			nSwitch(900000, 1, 0, "R", 20),
			nSwitch(1*ms, 0, 0, "R", 40),
			nWaking(2*ms, 1, 20, 10, 0),
			nWaking(3*ms, 0, 10, 30, 1),
			nSwitch(4*ms, 0, 10, "S", 40), nSwitch(5*ms, 0, 40, "S", 0),
			nSwitch(6*ms, 1, 20, "S", 30), nSwitch(7*ms, 1, 30, "S", 0),
		}, 2 * ms},
		{"busy, no wakeup", []timeline.Event{
			nSwitch(500000, 0, 0, "R", 10), nSwitch(800000, 0, 10, "S", 0),
			nSwitch(900000, 1, 0, "R", 20),
			nSwitch(1*ms, 0, 0, "R", 40),
			nWaking(2*ms, 1, 20, 10, 0),
			nSwitch(4*ms, 0, 10, "S", 40), nSwitch(5*ms, 0, 40, "S", 0),
			nSwitch(6*ms, 1, 20, "S", 30), nSwitch(7*ms, 1, 30, "S", 0),
		}, 2 * ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := Extract(&noiseReader{evs: c.evs})
			if err != nil {
				t.Fatal(err)
			}
			if w.LostSwitchIns != 1 {
				t.Errorf("lost switch-ins %d, want 1", w.LostSwitchIns)
			}
			idx := map[int32]int{}
			for i, tk := range w.Tasks {
				idx[tk.TID] = i
			}
			ten := w.Tasks[idx[10]]
			if len(ten.Activations) != 2 || ten.Activations[1].DemandNS != 2*ms {
				t.Errorf("task 10 activations %+v, want a second one of 2 ms", ten.Activations)
			}
			causal := false
			for _, e := range w.Edges {
				if e.Waker == int32(idx[10]) && e.Wakee == int32(idx[30]) {
					causal = e.Causal
				}
			}
			if c.name != "busy, no wakeup" && (!causal || w.Tasks[idx[30]].Activations[0].Cause != CauseWake) {
				t.Errorf("10's wakeup of 30 is not a causal edge (30 starts by %s)", w.Tasks[idx[30]].Activations[0].Cause)
			}
			if c.want40 > 0 {
				f := w.Tasks[idx[40]]
				if len(f.Activations) != 1 || f.Activations[0].DemandNS != c.want40 {
					t.Errorf("task 40 activations %+v, want one of %d ns", f.Activations, c.want40)
				}
			}
			if len(w.IdleWakeNS) != 0 {
				t.Errorf("idle-exit delays %v: a wakeup whose switch-in was lost has none", w.IdleWakeNS)
			}
		})
	}
}

// An inferred switch-in does not start before the displaced task's last
// sign of running on that CPU. By hand: 40 runs on CPU 0 from 1 ms and
// wakes 30 at 3 ms (its demand booked to 3 ms: the edge's offset is
// 2 ms); 10, woken onto CPU 0 at 2 ms, wakes 50 from CPU 0 at 4 ms: its
// switch-in was lost. Dated from 10's wakeup (2 ms) it would end 40's run
// before 40's own wakeup of 30, shrinking 40's demand below that edge's
// offset (a recorded hackbench -g 10 on this machine failed extraction so:
// "offset 7628 outside the waker's demand"). 10 ran from 3 ms: 40's demand
// is 2 ms to there plus 1 ms after 10 blocks at 5 ms, 10's is 2 ms.
func TestLostSwitchInAfterDisplacedTasksLastEvent(t *testing.T) {
	w, err := Extract(&noiseReader{evs: []timeline.Event{
		nSwitch(500000, 0, 0, "R", 10), nSwitch(800000, 0, 10, "S", 0),
		nSwitch(900000, 1, 0, "R", 20),
		nSwitch(1*ms, 0, 0, "R", 40),
		nWaking(2*ms, 1, 20, 10, 0),
		nWaking(3*ms, 0, 40, 30, 1),
		nWaking(4*ms, 0, 10, 50, 1),
		nSwitch(5*ms, 0, 10, "S", 40), nSwitch(6*ms, 0, 40, "S", 0),
		nSwitch(7*ms, 1, 20, "S", 30), nSwitch(8*ms, 1, 30, "S", 50), nSwitch(9*ms, 1, 50, "S", 0),
	}})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[int32]int{}
	for i, tk := range w.Tasks {
		idx[tk.TID] = i
	}
	if d40 := w.Tasks[idx[40]].DemandNS(); d40 != 3*ms {
		t.Errorf("task 40's demand %d ns, want 3 ms (activations %+v)", d40, w.Tasks[idx[40]].Activations)
	}
	ten := w.Tasks[idx[10]]
	if len(ten.Activations) != 2 || ten.Activations[1].DemandNS != 2*ms {
		t.Errorf("task 10 activations %+v, want a second one of 2 ms", ten.Activations)
	}
}

// The same rule when the lost switch-in shows at the task's own switch-out
// (onSwitch), not at a wakeup from it. By hand: 30 (CPU 1) wakes 20 onto
// CPU 0 at 0.5 ms; CPU 0 runs 10 from 1 ms, which wakes 40 at 3 ms; at
// 5 ms CPU 0 switches 20 out, blocking: 20's switch-in and 10's switch-out
// were not recorded. 10 ran until 3 ms at least, so 20 ran from 3 ms: 2 ms
// (from the CPU's last switch, 1 ms, it would be 4 ms, and CPU 0 would be
// charged 6 ms of demand over 4 ms). 10 runs again from 7 to 8 ms: its
// activation is 2 + 1 = 3 ms.
func TestLostSwitchInAtSwitchOutAfterDisplacedTasksLastEvent(t *testing.T) {
	w, err := Extract(&noiseReader{evs: displacedTrace()})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[int32]int{}
	for i, tk := range w.Tasks {
		idx[tk.TID] = i
	}
	if as := w.Tasks[idx[20]].Activations; len(as) != 1 || as[0].DemandNS != 2*ms {
		t.Errorf("task 20 activations %+v, want one of 2 ms", as)
	}
	if as := w.Tasks[idx[10]].Activations; len(as) != 1 || as[0].DemandNS != 3*ms {
		t.Errorf("task 10 activations %+v, want one of 3 ms", as)
	}
	if w.LostSwitchIns != 1 {
		t.Errorf("lost switch-ins %d, want 1", w.LostSwitchIns)
	}
}

// displacedTrace is TestLostSwitchInAtSwitchOutAfterDisplacedTasksLastEvent's
// trace, with extra events (in time order) between 40's run on CPU 1 and
// 10's on CPU 0 (TestWokeDisplaced).
func displacedTrace(extra ...timeline.Event) []timeline.Event {
	evs := []timeline.Event{
		nSwitch(100000, 1, 0, "R", 30),
		nWaking(500000, 1, 30, 20, 0),
		nSwitch(1*ms, 0, 0, "R", 10),
		nWaking(3*ms, 0, 10, 40, 1),
		nSwitch(5*ms, 0, 20, "S", 0),
		nSwitch(6*ms, 1, 30, "S", 40),
	}
	evs = append(evs, extra...)
	return append(evs, nSwitch(6500000, 1, 40, "S", 0), nSwitch(7*ms, 0, 0, "R", 10), nSwitch(8*ms, 0, 10, "S", 0))
}

// On a real trace with untraced switches (fixtures/local-6.18: this VM's
// 6.18 kernel leaves most switches out of idle untraced), stress-ng's
// processes fork from CPUs the trace shows idle or running another task.
// perf script shows 14 sched_process_fork (and 14 sched_wakeup_new)
// events in stressng-mix.perf.data: each must be a causal fork edge, not
// an arrival of the child (without the inference 5 of them were).
func TestLostSwitchesRealTrace(t *testing.T) {
	path := "../fixtures/local-6.18/stressng-mix.perf.data"
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	w, _ := extractFixture(t, path)
	n := 0
	for _, e := range w.Edges {
		if e.Kind == EdgeFork && e.Causal {
			n++
		}
	}
	if n != 14 {
		t.Errorf("%d causal fork edges, want the trace's 14 forks", n)
	}
	if w.LostSwitchIns == 0 {
		t.Error("no lost switch inferred on a trace with 79 switches from tasks not running")
	}
}

// The real-time wakeup preemptions of a real trace: on this VM's 6.18
// stress-ng recording the cyclic stressor (SCHED_FIFO, woken by its timer
// on a CPU running a CFS stressor) switches in 11 µs after its wakeup:
// perf sched timehist gives its 1,893 switch-ins a median "sch delay" of
// 0.011 ms (p90 0.013 ms). Extraction takes the ones that preempted a
// CFS task; they stay out of the CFS pools.
func TestExtractRTPreemptDelays(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/local-6.18/stressng-mix.perf.data")
	p := w.PreemptWakeRTNS
	if len(p) < 1800 || len(p) > 1893 {
		t.Fatalf("%d real-time wakeup preemptions, want 1800–1893", len(p))
	}
	if med := p[len(p)/2]; med < 10500 || med >= 11500 {
		t.Errorf("median delay %d ns, want 0.011 ms (perf sched timehist)", med)
	}
	if p90 := p[len(p)*9/10]; p90 < 12500 || p90 >= 14500 {
		t.Errorf("p90 delay %d ns, want 0.013–0.014 ms (perf sched timehist)", p90)
	}
	if n := len(w.PreemptWakeLocalNS) + len(w.PreemptWakeNS); n > 1000 {
		t.Errorf("%d CFS wakeup preemptions: the real-time ones went into the CFS pools too", n)
	}
}

// A trace whose timestamps span more than a week (damaged: 1000 s to
// 9e8 s here) is refused with the span, not simulated for hours (the
// replay ticks through simulated time) nor extracted into overflowing
// demands; a workload file with a demand, sleep or release that far out is
// refused too.
func TestSpanBeyondAWeek(t *testing.T) {
	_, err := Extract(&noiseReader{evs: []timeline.Event{
		nSwitch(1000*1000*ms, 0, 0, "R", 10),
		nSwitch(900000000*1000*ms, 0, 10, "S", 0),
	}})
	if err == nil || !strings.Contains(err.Error(), "span 899999000 s") || !strings.Contains(err.Error(), "more than a week") {
		t.Errorf("err %v", err)
	}
	for _, set := range []func(w *Workload){
		func(w *Workload) { w.Tasks[0].Activations[0].DemandNS = MaxSpanNS + 1 },
		func(w *Workload) { w.Tasks[0].Activations[1].SleepNS = -MaxSpanNS - 1 },
		func(w *Workload) { w.Tasks[0].Activations[1].ReleaseNS = w.StartNS + MaxSpanNS + 1 },
		func(w *Workload) { w.EndNS = w.StartNS + MaxSpanNS + 1 },
	} {
		w := tinyWorkload()
		set(w)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "more than a week") {
			t.Errorf("accepted: %v", err)
		}
	}
}

// WF_SYNC inferred only where the wakee's placements do not contradict it,
// by hand. Task 20 keeps CPU 1 busy; 30 and 50 last ran (and sleep) on
// CPU 1; 10 runs on CPU 0.
//   - A, 1 ms: 10 wakes 30 (its previous CPU 1) and blocks 20 µs later:
//     sync by the 50 µs rule. 30 then runs on CPU 1, busy, though 10 was
//     alone on CPU 0, where WF_SYNC would have stacked it: evidence
//     against, for 30.
//   - C, 3 ms: 10 (woken by an interrupt at 2 ms) wakes 50 and blocks;
//     50 runs on CPU 0: pulled onto its waker's CPU, evidence for, for 50.
//   - D, 4 ms: 20 on CPU 1 wakes 30 on the same CPU and blocks 20 µs
//     later: the trace cannot show the flag's effect there, and 30's
//     evidence (1 against, 0 for) says its wakeups are not WF_SYNC.
//
// So A and D are not sync, C is. With another task (60) queued on CPU 0
// at A, 10 was not alone: no evidence, and A and D stay sync.
func TestSyncInferenceFromPlacement(t *testing.T) {
	us := int64(1000)
	base := []timeline.Event{
		nSwitch(100*us, 1, 0, "R", 20), nSwitch(200*us, 0, 0, "R", 10),
		nSwitch(300*us, 1, 20, "R", 30), nSwitch(350*us, 1, 30, "S", 20),
		nSwitch(400*us, 1, 20, "R", 50), nSwitch(450*us, 1, 50, "S", 20),
	}
	rest := []timeline.Event{
		nWaking(1000*us, 0, 10, 30, 1), nSwitch(1020*us, 0, 10, "S", 0),
		nSwitch(1500*us, 1, 20, "R", 30), nSwitch(1600*us, 1, 30, "S", 20),
		nWaking(2000*us, 0, 0, 10, 0), nSwitch(2050*us, 0, 0, "R", 10),
		nWaking(3000*us, 0, 10, 50, 1), nSwitch(3020*us, 0, 10, "S", 50), nSwitch(3100*us, 0, 50, "S", 0),
		nWaking(4000*us, 1, 20, 30, 1), nSwitch(4020*us, 1, 20, "S", 30), nSwitch(4100*us, 1, 30, "S", 0),
	}
	queued := []timeline.Event{nSwitch(500*us, 0, 10, "R", 60), nSwitch(600*us, 0, 60, "R", 10)}
	for _, c := range []struct {
		name    string
		evs     []timeline.Event
		a, c, d bool
	}{
		{"alone", append(slices.Clone(base), rest...), false, true, false},
		{"not alone", append(append(slices.Clone(base), queued...), rest...), true, true, true},
	} {
		w, err := Extract(&noiseReader{evs: c.evs})
		if err != nil {
			t.Fatal(err)
		}
		idx := map[int32]int32{}
		for i, tk := range w.Tasks {
			idx[tk.TID] = int32(i)
		}
		sync := func(waker, wakee int32, at int64) (bool, bool) {
			for _, e := range w.Edges {
				if e.Waker == idx[waker] && e.Wakee == idx[wakee] && e.TimeNS == at {
					return e.Sync, true
				}
			}
			return false, false
		}
		for _, x := range []struct {
			what         string
			waker, wakee int32
			at           int64
			want         bool
		}{{"A", 10, 30, 1000 * us, c.a}, {"C", 10, 50, 3000 * us, c.c}, {"D", 20, 30, 4000 * us, c.d}} {
			got, ok := sync(x.waker, x.wakee, x.at)
			if !ok {
				t.Errorf("%s: no edge %s", c.name, x.what)
			} else if got != x.want {
				t.Errorf("%s: edge %s sync %v, want %v", c.name, x.what, got, x.want)
			}
		}
	}
}

// A run whose wakeup and switch-in the trace both lost (this VM's 6.18
// kernel) is dated by the task's first sched_stat_runtime: update_curr's
// delta runs from exec_start, set at the switch-in. By hand on CPU 0: 10
// runs from 0.5 ms and blocks at 1 ms; a runtime record of 10 at 4 ms
// says 1 ms, so it was switched in at 3 ms; it blocks again at 5 ms. Its
// second activation is an arrival released at 3 ms (the latest its
// wakeup can have been), 2 ms after its block, with 2 ms of demand. Dated
// from the CPU's last switch (its block at 1 ms) the run would be 4 ms
// long; released at the trace start, as before, its sleep was negative
// and the replay ran it again at once.
func TestLostWakeupDatedByRuntime(t *testing.T) {
	rt := nRuntime(4*ms, 0, 10, 0)
	rt.SetInt(timeline.Runtime, 1*ms)
	w, err := Extract(&noiseReader{evs: []timeline.Event{
		nSwitch(500000, 0, 0, "R", 10), nSwitch(1*ms, 0, 10, "S", 0),
		nSwitch(1100000, 1, 0, "R", 20),
		rt,
		nSwitch(5*ms, 0, 10, "S", 0),
		nSwitch(6*ms, 1, 20, "S", 0),
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ten *Task
	for i := range w.Tasks {
		if w.Tasks[i].TID == 10 {
			ten = &w.Tasks[i]
		}
	}
	if ten == nil || len(ten.Activations) != 2 {
		t.Fatalf("task 10: %+v, want two activations", ten)
	}
	a := ten.Activations[1]
	if a.Cause != CauseArrival || a.ReleaseNS != 3*ms || a.SleepNS != 2*ms || a.DemandNS != 2*ms {
		t.Errorf("second activation %+v, want an arrival released at 3 ms after 2 ms of sleep, 2 ms of demand", a)
	}
	if w.LostSwitchIns != 1 {
		t.Errorf("lost switch-ins %d, want 1", w.LostSwitchIns)
	}
}

// The recording TestExitingWakerSampleUnresolved's case was found in:
// perf script shows ":-1 -1 [000] 23.561492: sched:sched_waking:
// comm=stress-ng pid=432" right before "prev_pid=442 prev_state=X" on
// CPU 0 (a sleep stressor's exit waking its parent).
func TestExitingWakerFixture(t *testing.T) {
	w, tid := fixtureTIDs(t, "../fixtures/kernels/repeats/guest-P-1s2c1t/r2/stressng-mix.perf.data.gz")
	for _, tk := range w.Tasks {
		if tk.TID < 0 {
			t.Errorf("task %d extracted (%d activations)", tk.TID, len(tk.Activations))
		}
	}
	for _, e := range w.Edges {
		if tid[e.Wakee] == 432 && e.TimeNS > 23561491000 && e.TimeNS < 23561493000 {
			if tid[e.Waker] != 442 {
				t.Errorf("the waking of 432 at 23.561492 is from %d, want the exiting 442", tid[e.Waker])
			}
			return
		}
	}
	t.Fatal("no edge to 432 at 23.561492")
}

// syncByPulls, by hand: senders 10 (CPU 0) and 40 (CPU 1) each run alone
// on their CPU and wake receiver 30 in turn, which the trace shows pulled
// each time from its previous CPU onto the waker's (sched_migrate_task to
// the waker's CPU), where it preempts the waker 100 µs later (past the
// 50 µs rule, so that rule marks none). Five such pulls mark every wakeup
// of 30 WF_SYNC; four do not; five with one wakeup placed against it (30
// left on its busy previous CPU while its waker ran alone) do not either.
func TestSyncInferredFromPulls(t *testing.T) {
	us := int64(1000)
	start := []timeline.Event{
		nSwitch(100*us, 0, 0, "R", 10), nSwitch(110*us, 1, 0, "R", 40),
		nSwitch(300*us, 1, 40, "R", 30), nSwitch(400*us, 1, 30, "S", 40),
	}
	pulls := func(n int) []timeline.Event {
		var evs []timeline.Event
		for k := range n {
			at := int64(k+1) * 1000 * us
			waker, cpu, prev := int32(10), int32(0), int32(1)
			if k%2 == 1 {
				waker, cpu, prev = 40, 1, 0
			}
			evs = append(evs, nWaking(at, cpu, waker, 30, prev), nMigrate(at+10*us, cpu, 30, prev, cpu),
				nSwitch(at+100*us, cpu, waker, "R", 30), nSwitch(at+200*us, cpu, 30, "S", waker))
		}
		return evs
	}
	// Against: after the fifth pull (by 10, on CPU 0) 40 wakes 30 from CPU
	// 1, running alone there, and 30 stays on CPU 0, busy with 10.
	against := []timeline.Event{
		nWaking(7000*us, 1, 40, 30, 0),
		nSwitch(7100*us, 0, 10, "R", 30), nSwitch(7200*us, 0, 30, "S", 10),
	}
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want bool
	}{
		{"five pulls", append(slices.Clone(start), pulls(5)...), true},
		{"four pulls", append(slices.Clone(start), pulls(4)...), false},
		{"five pulls, one against", append(append(slices.Clone(start), pulls(5)...), against...), false},
	} {
		w, err := Extract(&noiseReader{evs: c.evs})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range w.Edges {
			if w.Tasks[e.Wakee].TID != 30 {
				continue
			}
			n++
			if e.Sync != c.want {
				t.Errorf("%s: the wakeup of 30 at %d sync %v, want %v", c.name, e.TimeNS, e.Sync, c.want)
			}
		}
		if n == 0 {
			t.Errorf("%s: no wakeups of 30", c.name)
		}
	}
}

// select_task_rq_fair drops WF_SYNC when the waker is exiting (PF_EXITING,
// set in do_exit just before sched_process_exit; perf sched record has
// only perf's own exit record, later in do_exit but before exit_notify
// wakes the parent, as guest-A's hackbench shows): the wakeups an exiting
// task sends (its pipes closed by exit_files, its parent notified) are not
// sync, though it leaves its CPU at once, and their placement is no
// evidence for the wakee's other wakeups. By hand, 10 runs on CPU 0 and
// at 1 ms wakes 20 onto CPU 1, leaving CPU 0 10 µs later:
//   - CPU 1 idle: sync by the 50 µs rule; with sched_process_exit of 10
//     before the wakeup, not sync.
//   - CPU 1 running 50, where 20 then runs: a placement WF_SYNC would not
//     have made (evidence against, for 20). 40 later wakes 20 on CPU 0 and
//     blocks at once: sync by the rule, but 20's evidence (1 against, 0
//     for) makes both of its wakeups not sync. If 10 was exiting, its
//     wakeup is no evidence: 40's wakeup stays sync.
func TestSyncDroppedForExitingWaker(t *testing.T) {
	us := int64(1000)
	var tpExit, perfExit timeline.Event
	tpExit.Time, tpExit.Kind, tpExit.Name = 990*us, timeline.SchedProcessExit, "sched:sched_process_exit"
	tpExit.SetInt(timeline.CommonPID, 10)
	tpExit.SetStr(timeline.Comm, "t")
	perfExit.Time, perfExit.Kind, perfExit.Name = 990*us, timeline.PerfExit, "perf:exit"
	for _, e := range []*timeline.Event{&tpExit, &perfExit} {
		e.SetInt(timeline.CPU, 0)
		e.SetInt(timeline.PID, 10)
	}
	for _, c := range []struct {
		busy, exiting  bool
		exit           timeline.Event
		want10, want40 bool
	}{
		{false, false, tpExit, true, true},
		{false, true, tpExit, false, true},
		{false, true, perfExit, false, true},
		{true, false, tpExit, false, false},
		{true, true, tpExit, false, true},
		{true, true, perfExit, false, true},
	} {
		evs := []timeline.Event{nSwitch(100*us, 0, 0, "R", 10), nSwitch(150*us, 1, 0, "R", 20)}
		if c.busy {
			evs = append(evs, nSwitch(180*us, 1, 20, "S", 50))
		} else {
			evs = append(evs, nSwitch(180*us, 1, 20, "S", 0))
		}
		end := "S"
		if c.exiting {
			evs, end = append(evs, c.exit), "X"
		}
		evs = append(evs, nWaking(1000*us, 0, 10, 20, 1), nSwitch(1010*us, 0, 10, end, 0))
		if c.busy {
			evs = append(evs, nSwitch(1100*us, 1, 50, "S", 20))
		} else {
			evs = append(evs, nSwitch(1050*us, 1, 0, "R", 20))
		}
		evs = append(evs, nSwitch(1200*us, 1, 20, "S", 0),
			nSwitch(2000*us, 0, 0, "R", 40), nWaking(3000*us, 0, 40, 20, 0), nSwitch(3010*us, 0, 40, "S", 20),
			nSwitch(3100*us, 0, 20, "S", 0))
		w, err := Extract(&noiseReader{evs: evs})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int{}
		for _, e := range w.Edges {
			if waker := w.Tasks[e.Waker].TID; w.Tasks[e.Wakee].TID == 20 {
				got[waker]++
				want := c.want10
				if waker == 40 {
					want = c.want40
				}
				if e.Sync != want {
					t.Errorf("busy %v, exiting %v (%s): %d's wakeup of 20 sync %v, want %v", c.busy, c.exiting, c.exit.Name, waker, e.Sync, want)
				}
			}
		}
		if got[10] != 1 || got[40] != 1 {
			t.Errorf("busy %v, exiting %v: wake edges of 20 by 10 and 40: %d, %d; want 1 each", c.busy, c.exiting, got[10], got[40])
		}
	}
}

// Two more sequences of an exiting waker, by hand (10 runs on CPU 0 from
// 100 µs; 20 and 30 asleep on CPU 1, which is idle):
//   - 10 wakes 20 at 1,000 µs, passes perf's exit record at 1,005, wakes
//     30 at 1,008 and leaves the CPU dead at 1,010: 30's wakeup is not
//     sync (exiting), and neither is 20's, which was not the waker's last
//     before it left. Without the exit record 30's is sync (the 50 µs
//     rule), 20's still not.
//   - 10 passes its exit record at 990, sleeps in D inside do_exit at
//     995, is woken by an interrupt at 1,000 and runs from 1,002, wakes
//     20 at 1,008 and leaves dead at 1,010: still exiting, not sync
//     (the D sleep is not its end).
func TestSyncExitingWakerSequences(t *testing.T) {
	us := int64(1000)
	exitAt := func(at int64) timeline.Event {
		var e timeline.Event
		e.Time, e.Kind, e.Name = at, timeline.PerfExit, "perf:exit"
		e.SetInt(timeline.CPU, 0)
		e.SetInt(timeline.PID, 10)
		return e
	}
	start := []timeline.Event{nSwitch(100*us, 0, 0, "R", 10), nSwitch(150*us, 1, 0, "R", 20), nSwitch(160*us, 1, 20, "S", 30), nSwitch(170*us, 1, 30, "S", 0)}
	for _, c := range []struct {
		name       string
		evs        []timeline.Event
		want20     bool
		want30     bool
		checks30   bool
		wantExitAt int64
	}{
		{"two wakeups, exiting", []timeline.Event{nWaking(1000*us, 0, 10, 20, 1), exitAt(1005 * us), nWaking(1008*us, 0, 10, 30, 1), nSwitch(1010*us, 0, 10, "X", 0)}, false, false, true, 1010 * us},
		{"two wakeups", []timeline.Event{nWaking(1000*us, 0, 10, 20, 1), nWaking(1008*us, 0, 10, 30, 1), nSwitch(1010*us, 0, 10, "S", 0)}, false, true, true, 0},
		{"D sleep in exit", []timeline.Event{exitAt(990 * us), nSwitch(995*us, 0, 10, "D", 0), nWaking(1000*us, 0, 0, 10, 0), nSwitch(1002*us, 0, 0, "R", 10), nWaking(1008*us, 0, 10, 20, 1), nSwitch(1010*us, 0, 10, "X", 0)}, false, false, false, 1010 * us},
	} {
		w, err := Extract(&noiseReader{evs: append(slices.Clone(start), c.evs...)})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int{}
		for _, e := range w.Edges {
			if w.Tasks[e.Waker].TID != 10 {
				continue
			}
			wakee := w.Tasks[e.Wakee].TID
			got[wakee]++
			want := c.want20
			if wakee == 30 {
				want = c.want30
			}
			if e.Sync != want {
				t.Errorf("%s: 10's wakeup of %d sync %v, want %v", c.name, wakee, e.Sync, want)
			}
		}
		if got[20] != 1 || c.checks30 && got[30] != 1 {
			t.Errorf("%s: 10's wake edges %v", c.name, got)
		}
		for _, tk := range w.Tasks {
			if tk.TID == 10 && tk.ExitNS != c.wantExitAt {
				t.Errorf("%s: 10 exits at %d, want %d", c.name, tk.ExitNS, c.wantExitAt)
			}
		}
	}
}

// A task first seen at its switch-in was runnable since the trace start
// when the trace records task creation (it would show a fork), and is an
// arrival at that switch-in when it does not: LISA's traces (sched_switch
// alone, or with sched_wakeup) show forked shell commands only from their
// first run, which the replay had queued from the trace start. By hand:
// CPU 0 runs 10 from 0.5 ms; CPU 1 switches from idle to 20, never seen
// before, at 5 ms, and 20 blocks at 6 ms.
func TestUnseenSwitchInWithoutCreationRecords(t *testing.T) {
	for _, c := range []struct {
		name    string
		events  []string // the trace's recorded events (metadata)
		cause   Cause
		release int64
	}{
		{"sched_switch alone", []string{"sched:sched_switch"}, CauseArrival, 5 * ms},
		{"with sched_wakeup_new", []string{"sched:sched_switch", "sched:sched_wakeup_new"}, CauseStart, ms / 2},
	} {
		r := &noiseReader{evs: []timeline.Event{
			nSwitch(ms/2, 0, 0, "R", 10),
			nSwitch(5*ms, 1, 0, "R", 20),
			nSwitch(6*ms, 1, 20, "S", 0),
		}}
		r.meta.Source.Events = c.events
		w := mustExtract(t, r)
		for _, tk := range w.Tasks {
			if tk.TID != 20 {
				continue
			}
			if a := tk.Activations[0]; a.Cause != c.cause || a.ReleaseNS != c.release || a.DemandNS != ms {
				t.Errorf("%s: 20's first activation %v released at %d ns, demand %d; want %v at %d, 1 ms", c.name, a.Cause, a.ReleaseNS, a.DemandNS, c.cause, c.release)
			}
		}
	}
}

// Each task's thread group comes from the trace: perf script prints
// schbench's threads on this machine as 27857/27859, 27857/27860 and
// 27857/27861 (pid/tid: one process), the main thread as 27857/27857;
// the fork recording's children are processes of their own
// (28748/28748). The workload's PID says the same, and a workload file
// keeps it.
func TestTaskPIDsFromTrace(t *testing.T) {
	for _, c := range []struct {
		path string
		pid  map[int32]int32 // tid -> pid
	}{
		{"../fixtures/local-6.18/schbench-m1-t2.perf.data", map[int32]int32{27857: 27857, 27859: 27857, 27860: 27857, 27861: 27857}},
		{"../fixtures/local-6.18/workloads/stressng-fork.perf.data", map[int32]int32{28645: 28645, 28647: 28647, 28748: 28748}},
	} {
		w, _ := extractFixture(t, c.path)
		for _, tk := range w.Tasks {
			if want, ok := c.pid[tk.TID]; ok && tk.PID != want {
				t.Errorf("%s: task %d: pid %d, want %d", c.path, tk.TID, tk.PID, want)
			}
		}
		r := reloadWorkload(t, w)
		for i := range w.Tasks {
			if r.Tasks[i].PID != w.Tasks[i].PID {
				t.Fatalf("%s: task %d: pid %d after a workload file, want %d", c.path, w.Tasks[i].TID, r.Tasks[i].PID, w.Tasks[i].PID)
			}
		}
	}
}

// syncPairs, by hand: 10 and 20 wake only each other on CPU 0, each
// blocking gap after its wakeup (12 wakeups each way); on CPU 1 the
// machine's pace: 30 wakes 40 twenty times and is preempted by it pace
// later (the trace's local wakeup preemptions, whose 90th percentile is
// the window). A gap past 50 µs within the pace makes every wakeup of
// the pair sync; a gap past the pace, no pace measured (fewer than 20
// preemptions), a pair below 10 wakeups a way, or a waker that sends a
// fifth of its wakeups elsewhere (to 50, on CPU 2) leave the pair to the
// 50 µs rule. 30's own wakeups of 40 are not a pair.
func TestSyncExclusivePair(t *testing.T) {
	us := int64(1000)
	build := func(gap, pace int64, pairN, paceN, other int) []timeline.Event {
		evs := []timeline.Event{
			nSwitch(5*us, 0, 0, "R", 20), nSwitch(8*us, 0, 20, "S", 10),
			nSwitch(3*us, 1, 0, "R", 40), nSwitch(4*us, 1, 40, "S", 30),
			nSwitch(6*us, 2, 0, "R", 50), nSwitch(7*us, 2, 50, "S", 0),
		}
		for k := range pairN {
			base := int64(k+1) * 1000 * us
			evs = append(evs,
				nWaking(base, 0, 10, 20, 0), nSwitch(base+gap, 0, 10, "S", 20),
				nWaking(base+500*us, 0, 20, 10, 0), nSwitch(base+500*us+gap, 0, 20, "S", 10))
		}
		for k := range paceN {
			base := int64(k+1)*1000*us + 250*us
			evs = append(evs, nWaking(base, 1, 30, 40, 1), nSwitch(base+pace, 1, 30, "R", 40), nSwitch(base+pace+50*us, 1, 40, "S", 30))
		}
		for k := range other {
			base := int64(k+1)*1000*us + 100*us
			evs = append(evs, nWaking(base, 0, 10, 50, 2), nSwitch(base+20*us, 2, 0, "R", 50), nSwitch(base+60*us, 2, 50, "S", 0))
		}
		slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.Time, b.Time) })
		return evs
	}
	for _, c := range []struct {
		name                string
		gap, pace           int64
		pairN, paceN, other int
		wantPair            bool
	}{
		{"gap within the pace", 100 * us, 120 * us, 12, 20, 0, true},
		{"gap past the pace", 150 * us, 120 * us, 12, 20, 0, false},
		{"no pace measured", 100 * us, 120 * us, 12, 19, 0, false},
		{"nine wakeups a way", 100 * us, 120 * us, 9, 20, 0, false},
		{"a fifth elsewhere", 100 * us, 120 * us, 12, 20, 3, false},
		{"within 50 µs", 40 * us, 120 * us, 12, 20, 3, true},
	} {
		w, err := Extract(&noiseReader{evs: build(c.gap, c.pace, c.pairN, c.paceN, c.other)})
		if err != nil {
			t.Fatal(err)
		}
		pair, other := 0, 0
		for _, e := range w.Edges {
			a, b := w.Tasks[e.Waker].TID, w.Tasks[e.Wakee].TID
			switch {
			case a == 10 && b == 20 || a == 20 && b == 10:
				pair++
				if e.Sync != c.wantPair {
					t.Errorf("%s: %d waking %d at %d sync %v, want %v", c.name, a, b, e.TimeNS, e.Sync, c.wantPair)
				}
			case a == 30 && b == 40:
				other++
				if e.Sync {
					t.Errorf("%s: 30 waking 40 at %d sync, want not (past 50 µs, not a pair)", c.name, e.TimeNS)
				}
			}
		}
		if want := 2*c.pairN - 1; pair < want {
			t.Errorf("%s: %d wakeups of the pair, want at least %d", c.name, pair, want)
		}
		if other != c.paceN {
			t.Errorf("%s: %d wakeups of 40, want %d", c.name, other, c.paceN)
		}
	}
}

// Demand is run time at capacity 1024: a run on a CPU of capacity c
// counts c/1024 of its length. The capacities are the trace's own
// topology's, or, for a trace that names none (a text trace), those of
// the machine the user gave for it (ExtractOptions.Topology). By hand:
// 10 runs on CPU 1 from 1 to 3 ms and blocks, so its demand is 2 ms at
// capacity 1024, 1 ms at 512 and 0.5 ms at 256.
func TestExtractDemandAtCapacity(t *testing.T) {
	spec := func(s string) *model.Topology {
		t.Helper()
		topo, err := model.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	for _, tc := range []struct {
		name         string
		traced, user *model.Topology
		want         int64
	}{
		{"no topology anywhere", nil, nil, 2 * ms},
		{"the user's machine for a trace without one", nil, spec("sockets=1,cores=2,capacity=0:1024/1:512"), 1 * ms},
		{"the trace's own machine", spec("sockets=1,cores=2,capacity=0:1024/1:256"), nil, 500000},
		{"the trace's own machine over the user's", spec("sockets=1,cores=2,capacity=0:1024/1:256"), spec("sockets=1,cores=2,capacity=0:1024/1:512"), 500000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &noiseReader{evs: []timeline.Event{
				nSwitch(1*ms, 1, 0, "R", 10),
				nSwitch(3*ms, 1, 10, "S", 0),
			}}
			r.meta.Topology = tc.traced
			w, err := ExtractWith(r, ExtractOptions{Topology: tc.user})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range w.Tasks {
				if tk.TID != 10 {
					continue
				}
				if d := tk.DemandNS(); d != tc.want {
					t.Errorf("task 10's demand %d ns, want %d", d, tc.want)
				}
				return
			}
			t.Fatal("task 10 not extracted")
		})
	}
}

// Workload.NoWakeContext says when a trace's wakings carry no
// common_flags: perf script's text and trace-cmd report's without its
// latency columns print none; a perf.data's samples hold them, and
// tracefs's default text prints them (its irqs-off, need-resched and
// hardirq/softirq columns, "d.h." before each timestamp).
func TestNoWakeContext(t *testing.T) {
	for _, c := range []struct {
		path string
		want bool
	}{
		{"../fixtures/text/perf_script_ns_fields.txt", true},
		{"../fixtures/text/tracecmd_report_noplugins.txt", true},
		{"../fixtures/text/tracefs_trace_default.txt", false},
		{"../fixtures/kernels/guest-D-1s8c1t/schbench.perf.data", false},
	} {
		w := extractText(t, c.path)
		if w.NoWakeContext != c.want {
			t.Errorf("%s: NoWakeContext %v, want %v", c.path, w.NoWakeContext, c.want)
		}
	}
}

// extractText extracts the workload of the trace at path, on its own
// topology or, for a text without one, two CPUs (this machine's, where
// the text fixtures were recorded).
func extractText(t *testing.T, path string) *Workload {
	t.Helper()
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	topo := r.Meta().Topology
	if topo == nil {
		if topo, err = model.ParseSpec("sockets=1,cores=2,threads=1"); err != nil {
			t.Fatal(err)
		}
	}
	w, err := ExtractWith(r, ExtractOptions{Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// What NoWakeContext costs, as its doc says: the perf script text of
// perf_sched_pipe.data has 41 wake edges where the perf.data itself
// (../shared, skipped without it) has 13, the text's interrupt wakeups
// taken for the interrupted tasks' (counted with `replay info --json`
// of each one's --save-workload: wake_edges_by_kind).
func TestNoWakeContextEdges(t *testing.T) {
	for _, c := range []struct {
		path string
		want int
	}{
		{"../fixtures/text/perf_script_ns_fields.txt", 41},
		{"../../shared/fixtures/recorded/perf_sched_pipe.data", 13},
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: %v; skipped", c.path, err)
			continue
		}
		w := extractText(t, c.path)
		n := 0
		for _, e := range w.Edges {
			if e.Kind == EdgeWake {
				n++
			}
		}
		if n != c.want {
			t.Errorf("%s: %d wake edges, want %d", c.path, n, c.want)
		}
	}
}
