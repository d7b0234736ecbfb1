package whatif

import (
	"fmt"
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The interrupts' own pool of local preemption delays, by hand. Task 20
// runs on CPU 0. At 2 ms a hard IRQ there (in 20's context) wakes 10
// onto CPU 0, which preempts 20 5 µs later; at 3 ms task 20 itself wakes
// 11 onto CPU 0, which preempts it 30 µs later. Both delays are local;
// only the first is an interrupt's. The pools survive a workload file.
func TestIRQLocalPoolExtracted(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 20),
		withFlags(nWaking(2*ms, 0, 20, 10, 0), hardirq),
		nSwitch(2*ms+5000, 0, 20, "R", 10),
		nSwitch(2*ms+500000, 0, 10, "S", 20),
		nWaking(3*ms, 0, 20, 11, 0),
		nSwitch(3*ms+30000, 0, 20, "R", 11),
		nSwitch(3*ms+500000, 0, 11, "S", 20),
	}}
	w := mustExtract(t, r)
	for _, c := range []struct {
		how string
		w   *Workload
	}{{"extracted", w}, {"after a workload file", reloadWorkload(t, w)}} {
		if got := fmt.Sprint(c.w.PreemptWakeLocalNS, c.w.PreemptWakeLocalIRQNS, c.w.PreemptWakeNS); got != "[5000 30000] [5000] []" {
			t.Errorf("%s: local, interrupts' local and remote pools %s, want [5000 30000] [5000] []", c.how, got)
		}
	}
}

// Which pool an interrupt's wakeup preemption on its own CPU draws from,
// by hand: one CPU; K runs 50 µs from t0 and sleeps, hog H (queued at t0)
// runs from then on; an interrupt wakes K at t0+6 ms, whose sleeper's
// credit puts it 3 ms before H (min_vruntime less half of sched_latency,
// 6 ms on one CPU), more than wakeup_gran (1 ms): it preempts H after the
// drawn delay. Every delay of a pool is the same: the remote pool's 200
// µs, the tasks' local pool's 50 µs, the interrupts' own 5 µs. With
// enough of the interrupts' own (minSamples) K runs at t0+6.005 ms; with
// fewer, or none (a workload file from before them), the draw is the
// remote pool's, as the replay's was: t0+6.2 ms.
func TestIRQLocalPoolDrawn(t *testing.T) {
	for _, c := range []struct {
		irqPool int
		want    int64
	}{{minSamples, t0 + 6*ms + 5000}, {minSamples - 1, t0 + 6*ms + 200000}, {0, t0 + 6*ms + 200000}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		k := b.task("k", 120, 0, true, CauseStart, ms/20, ms/10)
		b.task("hog", 120, 0, false, CauseStart, 20*ms)
		a := &b.w.Tasks[k].Activations[1]
		a.Cause, a.ReleaseNS, a.SleepNS = CauseArrival, t0+6*ms, 6*ms-ms/20
		b.w.PreemptWakeNS, b.w.PreemptWakeLocalNS = slices.Repeat([]int64{200000}, minSamples), slices.Repeat([]int64{50000}, minSamples)
		b.w.PreemptWakeLocalIRQNS = slices.Repeat([]int64{5000}, c.irqPool)
		w := b.done(t)
		cfg := testConfig()
		cfg.IdleWake = true // the draws
		_, ch := replayChecked(t, w, cfg)
		run := ch.firstRunAfter(int64(w.Tasks[k].TID), t0+ms)
		if run == nil || run.start != c.want {
			t.Errorf("%d delays of the interrupts' own: K's run after its sleep %+v, want from %d ns after t0", c.irqPool, run, c.want-t0)
		}
	}
}
