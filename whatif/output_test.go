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
