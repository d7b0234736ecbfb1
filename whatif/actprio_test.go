package whatif

import (
	"fmt"
	"testing"
)

// An activation carries the prio its task ran it under: stress-ng's
// cyclic stressor changes its policy with sched_setscheduler. Expected
// from `perf script` on guest-N's stress-ng: pid 446 runs its first
// activation at prio 120 (switched out S at 22.209135), its second
// mostly at 120 (5.5 + 7.9 ms before 22.233566, then 3.6 ms at prio 0
// until 22.246119), its last two at 0 (ending Z at 24.225975); its child
// 449 runs its first activation at 120 (forked at prio 120, switched out
// S at 22.242513) and the next at 0. Both tasks ran longest at prio 0
// overall (Task.Prio).
func TestActivationPrioFixture(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/guest-N-2s1c1t-2numa/stressng-mix.perf.data.gz")
	for _, c := range []struct {
		tid  int32
		n    int
		want string
	}{{446, 4, "[120 120 0 0]"}, {449, 2, "[120 0]"}} {
		var task *Task
		for i := range w.Tasks {
			if w.Tasks[i].TID == c.tid {
				task = &w.Tasks[i]
			}
		}
		if task == nil {
			t.Fatalf("task %d not extracted", c.tid)
		}
		var got []int32
		for k, a := range task.Activations {
			if k == c.n {
				break
			}
			if !a.OwnPrio {
				t.Fatalf("task %d activation %d: no prio of its own", c.tid, k)
			}
			got = append(got, a.Prio)
		}
		if s := fmt.Sprint(got); s != c.want || task.Prio != 0 {
			t.Errorf("task %d: activation prios %s and task prio %d, want %s and 0", c.tid, s, task.Prio, c.want)
		}
	}
}

// An activation's own prio survives the workload file, prio 0 (a
// real-time activation) told apart from none (null).
func TestActivationPrioRoundTrip(t *testing.T) {
	w := tinyWorkload()
	back := reloadWorkload(t, w)
	for i := range w.Tasks {
		for k, a := range w.Tasks[i].Activations {
			b := back.Tasks[i].Activations[k]
			if a.OwnPrio != b.OwnPrio || a.Prio != b.Prio {
				t.Errorf("task %d activation %d: prio %d/%v read back as %d/%v", i, k, a.Prio, a.OwnPrio, b.Prio, b.OwnPrio)
			}
		}
	}
	if a := back.Tasks[0].Activations[1]; !a.OwnPrio || a.Prio != 0 {
		t.Errorf("the real-time activation read back as prio %d own %v", a.Prio, a.OwnPrio)
	}
}
