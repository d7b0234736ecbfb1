package whatif

import (
	"os"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A switch to idle the trace lost, by hand. Task 30 runs on CPU 1
// throughout. Case idle-record: CPU 0 switches idle to 10 at 1 ms; 10
// wakes 40 (onto CPU 1) at 2 ms; at 4 ms CPU 0's idle task wakes 50
// there (a record in idle's context): 10's switch to idle was lost, so
// its run ends at 2 ms, its last record: 1 ms of demand, a sleep. 30
// wakes 10 at 5 ms, a wakeup of a sleeping task (causal); CPU 0 runs 50
// from 4.1 ms and 10 from 5.2 to 6 ms: a second activation of 0.8 ms.
// Case idle-switch: 10's own update at 1.5 ms, then 30 wakes it at 2 ms
// (while it is believed running: a waking races a block) and CPU 0
// switches idle to 10 at 2.2 ms (idle switching out, its switch in
// lost): the first run ends at 1.5 ms (0.5 ms), the waking is what
// released the second (causal, raced), which runs 2.2 to 3 ms (0.8 ms).
// Without the rule 10 has one activation in both cases.
func TestLostSwitchOut(t *testing.T) {
	cases := []struct {
		name    string
		evs     []timeline.Event
		demands []int64
		raced   bool
	}{
		{"idle-record", []timeline.Event{
			nSwitch(100000, 1, 0, "R", 30),
			nSwitch(1*ms, 0, 0, "R", 10),
			nWaking(2*ms, 0, 10, 40, 1),
			nWaking(4*ms, 0, 0, 50, 0),
			nSwitch(4100000, 0, 0, "R", 50),
			nWaking(5*ms, 1, 30, 10, 0),
			nSwitch(5200000, 0, 50, "S", 10),
			nSwitch(6*ms, 0, 10, "S", 0),
		}, []int64{1 * ms, 800000}, false},
		{"idle-switch", []timeline.Event{
			nSwitch(100000, 1, 0, "R", 30),
			nSwitch(1*ms, 0, 0, "R", 10),
			ownRuntime(1500000, 0, 10, 0),
			nWaking(2*ms, 1, 30, 10, 0),
			nSwitch(2200000, 0, 0, "R", 10),
			nSwitch(3*ms, 0, 10, "S", 0),
		}, []int64{500000, 800000}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Extract(&noiseReader{evs: c.evs})
			if err != nil {
				t.Fatal(err)
			}
			if w.LostSwitchOuts != 1 {
				t.Errorf("lost switch-outs %d, want 1", w.LostSwitchOuts)
			}
			ti := -1
			for i, tk := range w.Tasks {
				if tk.TID == 10 {
					ti = i
				}
			}
			as := w.Tasks[ti].Activations
			if len(as) != len(c.demands) {
				t.Fatalf("task 10 activations %+v, want %d", as, len(c.demands))
			}
			for i, d := range c.demands {
				if as[i].DemandNS != d {
					t.Errorf("activation %d demand %d, want %d", i, as[i].DemandNS, d)
				}
			}
			if as[0].End != EndSleep {
				t.Errorf("first activation ends %v, want a sleep", as[0].End)
			}
			woke := false
			for _, e := range w.Edges {
				if e.Wakee == int32(ti) && w.Tasks[e.Waker].TID == 30 {
					woke = true
					if !e.Causal || e.WakeeAct != 1 || e.Raced != c.raced {
						t.Errorf("30's wakeup of 10: causal %v, wakee activation %d, raced %v; want causal, 1, raced %v", e.Causal, e.WakeeAct, e.Raced, c.raced)
					}
				}
			}
			if !woke {
				t.Error("no edge from 30 to 10")
			}
		})
	}
}

// On real traces from this machine's 6.18.44 kernel, some tokio-rt-worker
// threads (a nice -10 agent) are switched in and their switch back to
// idle is missing: the CPU's next switch is idle's own. A script over
// perf script's sched_switch lines (a switch whose prev_pid is 0 on a CPU
// whose last switch went to a task) counts 4 in the vfork recording and 2
// in schbench-m1-t2; extraction finds the same. In the vfork recording,
// by hand from perf script --ns: 81 is switched in on CPU 1 at
// 8523.216600513 and CPU 0 updates it (update_curr from elsewhere, which
// shows it still current) at 8523.217595576, its last record: 995,063 ns
// of demand; 82, switched in at 8523.049597079, has no record after:
// none. 74 is switched in at 8523.021445691 and displaced by stress-ng
// (1025), whose first update there dates its lost switch-in at
// 8523.023639792 less 2,039,888 ns: 154,213 ns; the idle task's waking
// of 74 at 8523.040708879 says it had blocked then, not been preempted
// (wokeDisplaced): that waking starts a second activation, and
// kworker/1:0's waking (8523.041083440) before 74's next switch-in from
// idle (8523.041145799) a third. Before the rules 74 and 82 ran to the
// trace's end (180 and 171 ms of demand in a 0.2 s trace).
func TestLostSwitchOutsRealTrace(t *testing.T) {
	for _, c := range []struct {
		path   string
		outs   int
		demand map[int32]int64
	}{
		{"../fixtures/local-6.18/workloads/stressng-vfork.perf.data", 4, map[int32]int64{81: 995063, 82: 0}},
		{"../fixtures/local-6.18/schbench-m1-t2.perf.data", 2, nil},
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Skip(err)
		}
		w, _ := extractFixture(t, c.path)
		if w.LostSwitchOuts != c.outs {
			t.Errorf("%s: %d lost switches to idle, want perf script's %d", c.path, w.LostSwitchOuts, c.outs)
		}
		for i, tk := range w.Tasks {
			if want, ok := c.demand[tk.TID]; ok {
				if d := tk.DemandNS(); d != want {
					t.Errorf("%s: task %d (%s) demand %d ns, want %d", c.path, tk.TID, tk.Comm, d, want)
				}
			}
			if tk.TID != 74 || c.demand == nil {
				continue
			}
			as := tk.Activations
			if len(as) != 3 || as[0].DemandNS != 154213 || as[0].End != EndSleep || as[1].Cause != CauseArrival || as[1].ReleaseNS != 8523040708879 {
				t.Errorf("%s: task 74's activations %+v, want three: 154,213 ns ending asleep, an arrival at 8523040708879, a wakeup", c.path, as)
			}
			found := false
			for _, e := range w.Edges {
				if e.Wakee == int32(i) && w.Tasks[e.Waker].TID == 25 {
					found = e.Causal && e.WakeeAct == 2
				}
			}
			if !found {
				t.Errorf("%s: kworker/1:0's waking of 74 is not the cause of its third activation", c.path)
			}
		}
	}
}

// A task a lost switch left runnable, then woken before it runs again,
// by hand (TestLostSwitchInAtSwitchOutAfterDisplacedTasksLastEvent's
// trace with a waking added): CPU 0 runs 10 from 1 ms, which wakes 40 at
// 3 ms; at 5 ms CPU 0 switches 20 out (its switch-in, and 10's switch
// out, lost): 10 is displaced at 3 ms. 40, running on CPU 1, wakes 10
// at 6.2 ms, a sched_waking no preempted task gets: 10 had blocked at 3
// ms. Its
// first activation ends there (2 ms, a sleep) and the waking starts a
// second (7 to 8 ms: 1 ms). Without the waking (the other test) it is
// one activation of 3 ms.
func TestWokeDisplaced(t *testing.T) {
	w, err := Extract(&noiseReader{evs: displacedTrace(nWaking(6200000, 1, 40, 10, 0))})
	if err != nil {
		t.Fatal(err)
	}
	ti := -1
	for i, tk := range w.Tasks {
		if tk.TID == 10 {
			ti = i
		}
	}
	as := w.Tasks[ti].Activations
	if len(as) != 2 || as[0].DemandNS != 2*ms || as[0].End != EndSleep || as[1].DemandNS != 1*ms || as[1].Cause != CauseWake {
		t.Fatalf("task 10 activations %+v, want 2 ms ending asleep, then 1 ms woken by 40", as)
	}
	if w.DisplacedWoken != 1 {
		t.Errorf("displaced and woken %d, want 1", w.DisplacedWoken)
	}
}
