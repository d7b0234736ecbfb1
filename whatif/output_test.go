package whatif

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// statRuntimes collects the sched_stat_runtime events of a replay.
type statRuntimes struct{ ev []timeline.Event }

func (s *statRuntimes) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedStatRuntime {
		c := *e
		c.Fields = nil
		s.ev = append(s.ev, c)
	}
	return nil
}

// sched_stat_runtime by kernel, by hand: one CPU; an RT task (prio 49)
// woken by a timer 1 ms into a CFS hog's 3 ms run runs 0.5 ms, then the
// hog finishes. v5.10 traces CFS runtime only, with vruntime: the hog's two
// slices, 1 ms and 2 ms. 6.1's update_curr_rt traces the RT task's 0.5 ms
// too, with vruntime 0 (as the guests' traces show their SCHED_FIFO
// stress-ng-cyclic), but not the stopper's (migration/0). From v6.8 every
// class accounts through the same function and the field is gone.
func TestStatRuntimeByKernel(t *testing.T) {
	for _, c := range []struct {
		policy, rtComm string
		want           []int64 // runtimes, in order
		vruntime       bool
	}{
		{"llc-nr-running", "rt", []int64{ms, 2 * ms}, true},
		{"v6.1", "rt", []int64{ms, ms / 2, 2 * ms}, true},
		{"v6.1", "migration/0", []int64{ms, 2 * ms}, true},
		{"latest", "rt", []int64{ms, ms / 2, 2 * ms}, false},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("hog", 120, 0, true, CauseStart, 3*ms)
		rt := b.task(c.rtComm, 49, 0, false, CauseArrival, ms/2)
		b.w.Tasks[rt].Activations[0].ReleaseNS = t0 + ms
		w := b.done(t)
		sr := &statRuntimes{}
		if _, err := Replay(w, policyConfig(t, c.policy), Tee{newChecker(t), sr}); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range sr.ev {
			got = append(got, e.Int(timeline.Runtime))
			if e.IsSet(timeline.Vruntime) != c.vruntime {
				t.Errorf("%s: vruntime field set %v, want %v", c.policy, e.IsSet(timeline.Vruntime), c.vruntime)
			}
			if e.Int(timeline.Runtime) == ms/2 && c.vruntime && e.Int(timeline.Vruntime) != 0 {
				t.Errorf("%s: the RT task's vruntime %d, want 0", c.policy, e.Int(timeline.Vruntime))
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s, %s: runtimes %v, want %v", c.policy, c.rtComm, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s, %s: runtimes %v, want %v", c.policy, c.rtComm, got, c.want)
				break
			}
		}
	}
}

// Every update_curr writes its sched_stat_runtime, by hand: one CPU, HZ
// 250 (ticks at t0 + 4k ms); a CFS hog runs 10 ms from t0, and a timer
// wakes a second CFS task (1 ms of work) at 5.5 ms. The hog's tick at 4 ms
// writes 4 ms in hard-IRQ context (flag 0x08, as the kernel's tick); the
// wakee's enqueue charges the hog 1.5 ms, and the wakee preempts (the
// hog's request, renewed at the tick, is used up); the wakee's switch-out
// at 6.5 ms writes its 1 ms; the tick at 8 ms the hog's 1.5 ms since it
// resumed; its exit at 11 ms the last 3 ms. The hog's four sum to its 10 ms.
func TestStatRuntimeEveryUpdateCurr(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	hog := b.task("hog", 120, 0, true, CauseStart, 10*ms)
	w := b.task("wakee", 120, 0, false, CauseArrival, ms)
	b.w.Tasks[w].Activations[0].ReleaseNS = t0 + 5*ms + ms/2
	sr := &statRuntimes{}
	if _, err := Replay(b.done(t), policyConfig(t, "v6.12"), Tee{newChecker(t), sr}); err != nil {
		t.Fatal(err)
	}
	hogTID, wTID := int64(b.w.Tasks[hog].TID), int64(b.w.Tasks[w].TID)
	want := []struct{ at, pid, runtime, flags int64 }{
		{4 * ms, hogTID, 4 * ms, flagHardIRQ},
		{5*ms + ms/2, hogTID, ms + ms/2, 0},
		{6*ms + ms/2, wTID, ms, 0},
		{8 * ms, hogTID, ms + ms/2, flagHardIRQ},
		{11 * ms, hogTID, 3 * ms, 0},
	}
	if len(sr.ev) != len(want) {
		t.Fatalf("%d sched_stat_runtime events, want %d", len(sr.ev), len(want))
	}
	for i, e := range sr.ev {
		got := struct{ at, pid, runtime, flags int64 }{e.Time - t0, e.Int(timeline.PID), e.Int(timeline.Runtime), e.Int(timeline.CommonFlags)}
		if got != want[i] {
			t.Errorf("runtime %d: at, pid, runtime, flags = %v, want %v", i, got, want[i])
		}
	}
}
