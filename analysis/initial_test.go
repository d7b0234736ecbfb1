package analysis

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A trace that starts mid-run (a flight-recorder one) meets tasks in every
// state; each task's state at the start is inferred from its first
// scheduling event, and a task first seen switching in has no wakeup
// latency (its wait began before the trace).
func TestInitialStates(t *testing.T) {
	ev := func(tm int64, kind timeline.Kind, cpu int, set func(e *timeline.Event)) timeline.Event {
		var e timeline.Event
		e.Time, e.Kind, e.Name = tm, kind, kind.String()
		e.SetInt(timeline.CPU, int64(cpu))
		set(&e)
		return e
	}
	sw := func(tm int64, cpu int, prev int64, state string, next int64) timeline.Event {
		return ev(tm, timeline.SchedSwitch, cpu, func(e *timeline.Event) {
			e.SetInt(timeline.PrevPID, prev)
			e.SetStr(timeline.PrevState, state)
			e.SetInt(timeline.NextPID, next)
		})
	}
	wake := func(tm int64, kind timeline.Kind, pid int64) timeline.Event {
		return ev(tm, kind, 0, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.TargetCPU, 0)
		})
	}
	evs := []timeline.Event{
		sw(1000, 0, 10, "S", 11),                // 10 was running; 11 was runnable (no wakeup seen)
		wake(2000, timeline.SchedWaking, 12),    // 12 was sleeping
		wake(2500, timeline.SchedWakeupNew, 13), // 13 is created in the trace
		sw(3000, 0, 11, "S", 12),                // 12 runs 1000 ns after its wakeup
		sw(4000, 0, 12, "S", 13),
		wake(5000, timeline.SchedWaking, 10), // 10 was already met: stays "running"
		sw(6000, 0, 13, "S", 10),
	}
	rep, err := Run(&sliceReader{evs: evs}, Options{TaskDelays: PerfLatency67})
	if err != nil {
		t.Fatal(err)
	}
	want := InitialStates{Running: 1, Runnable: 1, Sleeping: 1, Created: 1}
	if rep.InitialStates != want {
		t.Errorf("initial states %+v, want %+v", rep.InitialStates, want)
	}
	// Wakeup latencies: 12 (1000 ns), 13 (1500 ns), 10 (1000 ns); none for
	// 11, whose wait began before the trace.
	if rep.WakeupLatency.Count != 3 || rep.WakeupLatency.MaxNS != 1500 {
		t.Errorf("wakeup latency %+v, want 3 samples, max 1500 ns", rep.WakeupLatency)
	}
}
