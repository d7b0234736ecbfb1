package analysis

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// ev is a hand-built event of kind at tm on cpu; set fills its fields.
func ev(tm int64, kind timeline.Kind, cpu int, set func(e *timeline.Event)) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = tm, kind, kind.String()
	e.SetInt(timeline.CPU, int64(cpu))
	set(&e)
	return e
}

// sw is a hand-built sched_switch on cpu from prev (leaving in state) to next.
func sw(tm int64, cpu int, prev int64, state string, next int64) timeline.Event {
	return ev(tm, timeline.SchedSwitch, cpu, func(e *timeline.Event) {
		e.SetInt(timeline.PrevPID, prev)
		e.SetStr(timeline.PrevState, state)
		e.SetInt(timeline.NextPID, next)
	})
}

// A trace that starts mid-run (a flight-recorder one) meets tasks in every
// state; each task's state at the start is inferred from its first
// scheduling event, and a task first seen switching in has no wakeup
// latency (its wait began before the trace).
func TestInitialStates(t *testing.T) {
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
	rep, err := Run(&timeline.SliceReader{Events: evs}, Options{TaskDelays: PerfLatency67})
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

// A task switched in on a second CPU with no switch-out on the first (that
// CPU's record lost, as perf's own at the end of guest-M's schbench
// recording) has one wakeup latency, to the later switch-in: timehist
// prints one row for it (at its switch-out, from the CPU's previous
// switch), and the analysis's distribution must count what the slices
// show, as the report's and pprof's totals do. By hand: 20 woken at
// 1000, in on CPU 0 at 1200, in on CPU 1 at 1500 (the CPU 0 switch-out
// lost), out at 1800: one sample, 500 ns.
func TestSwitchInTwiceOneLatency(t *testing.T) {
	evs := []timeline.Event{
		sw(100, 0, 10, "S", 0),
		sw(110, 1, 11, "S", 0),
		ev(1000, timeline.SchedWaking, 1, func(e *timeline.Event) { e.SetInt(timeline.PID, 20); e.SetInt(timeline.TargetCPU, 0) }),
		sw(1200, 0, 0, "R", 20),
		sw(1500, 1, 0, "R", 20),
		sw(1800, 1, 20, "S", 0),
	}
	// Also with 20 still running on CPU 1 when the trace ends: both CPUs'
	// slices are cut there, and only CPU 1's carries the wakeup.
	for _, evs := range [][]timeline.Event{evs, evs[:5]} {
		sl := &collectSlices{}
		rep, err := Run(&timeline.SliceReader{Events: evs}, Options{Slices: sl})
		if err != nil {
			t.Fatal(err)
		}
		if rep.WakeupLatency.Count != 1 || rep.WakeupLatency.MaxNS != 500 {
			t.Errorf("%d events: wakeup latency %+v, want 1 sample of 500 ns", len(evs), rep.WakeupLatency)
		}
		var delays []int64
		for _, s := range sl.s {
			if s.Start >= 0 && s.Wakeup >= 0 && !s.SpansLoss {
				delays = append(delays, s.SchDelay)
			}
		}
		if len(delays) != 1 || delays[0] != 500 {
			t.Errorf("%d events: slices' scheduling delays %v, want [500]", len(evs), delays)
		}
		// whatif --validate's measure (FirstSwitchIn): the wakeup was
		// served at 1200, 200 ns; the switch-in at 1500 is counted apart
		// and the slices stay timehist's.
		sl = &collectSlices{}
		rep, err = Run(&timeline.SliceReader{Events: evs}, Options{Slices: sl, FirstSwitchIn: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := rep.WakeupLatency; d.Count != 1 || d.MaxNS != 200 || d.RepeatSwitchIns != 1 {
			t.Errorf("%d events, first switch-in: wakeup latency %+v, want 1 sample of 200 ns, 1 repeat switch-in", len(evs), d)
		}
		var again []int64
		for _, s := range sl.s {
			if s.Start >= 0 && s.Wakeup >= 0 && !s.SpansLoss {
				again = append(again, s.SchDelay)
			}
		}
		if !slices.Equal(again, delays) {
			t.Errorf("%d events, first switch-in: slices' scheduling delays %v, want timehist's %v", len(evs), again, delays)
		}
	}
}
