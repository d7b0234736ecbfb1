package whatif

import (
	"testing"

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
	w, err := Extract(r)
	if err != nil {
		t.Fatal(err)
	}
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
