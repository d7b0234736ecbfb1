package analysis

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// TrimIdleTail by hand. Two CPUs: 10 runs on CPU 0 from 1000 to 5000,
// 11 on CPU 1 from 2000 to 4000; a power event at 9000 (an idle CPU's,
// as LISA's traces record) ends the trace. Trimmed, the window ends at
// the last switch (5000) and CPU 1 is idle 2000 (from the trace's start
// at 1000 to 2000, its first switch leaving idle, and 4000 to 5000), the
// tail 4000; untrimmed, 6000. It is not trimmed when a CPU is
// still running at the end, when a woken task still waits, or without
// the option.
func TestTrimIdleTail(t *testing.T) {
	power := ev(9000, timeline.KindOther, 0, func(e *timeline.Event) { e.Name = "power:cpu_idle" })
	base := []timeline.Event{
		sw(1000, 0, 0, "R", 10),
		sw(2000, 1, 0, "R", 11),
		sw(4000, 1, 11, "S", 0),
		sw(5000, 0, 10, "S", 0),
	}
	waking := ev(6000, timeline.SchedWaking, 1, func(e *timeline.Event) { e.SetInt(timeline.PID, 11); e.SetInt(timeline.TargetCPU, 1) })
	for _, c := range []struct {
		name     string
		evs      []timeline.Event
		trim     bool
		end      int64
		tail     int64
		idleCPU1 int64
	}{
		{"idle tail", append(append([]timeline.Event{}, base...), power), true, 5000, 4000, 2000},
		{"option off", append(append([]timeline.Event{}, base...), power), false, 9000, 0, 6000},
		{"CPU 0 still busy", append(append([]timeline.Event{}, base[:3]...), power), true, 9000, 0, 6000},
		{"a wakee waits", append(append([]timeline.Event{}, base...), waking, power), true, 9000, 0, 6000},
		{"nothing after the last switch", base, true, 5000, 0, 2000},
	} {
		rep, err := Run(&timeline.SliceReader{Events: c.evs}, Options{TrimIdleTail: c.trim})
		if err != nil {
			t.Fatal(err)
		}
		var idle1 int64
		for _, s := range rep.CPUs {
			if s.CPU == 1 {
				idle1 = s.IdleNS
			}
		}
		if rep.EndNS != c.end || rep.IdleTailNS != c.tail || idle1 != c.idleCPU1 {
			t.Errorf("%s: end %d, tail %d, CPU 1 idle %d; want %d, %d, %d", c.name, rep.EndNS, rep.IdleTailNS, idle1, c.end, c.tail, c.idleCPU1)
		}
	}
}

// SilentCPUsIdle by hand: a three-CPU machine whose trace has events on
// CPUs 0 and 1 only (1000 to 5000 ns); CPU 2 counts idle over the whole
// window, 4000 ns, and is listed; without the option it is not.
func TestSilentCPUsIdle(t *testing.T) {
	evs := []timeline.Event{
		sw(1000, 0, 0, "R", 10),
		sw(2000, 1, 0, "R", 11),
		sw(4000, 1, 11, "S", 0),
		sw(5000, 0, 10, "S", 0),
	}
	for _, on := range []bool{true, false} {
		rep, err := Run(&timeline.SliceReader{Events: evs}, Options{NumCPUs: 3, SilentCPUsIdle: on})
		if err != nil {
			t.Fatal(err)
		}
		var idle int64
		for _, c := range rep.CPUs {
			idle += c.IdleNS
		}
		// CPU 0: none; CPU 1: 1000 before its first switch and 1000 after.
		want, silent, n := int64(2000), 0, 2
		if on {
			want, silent, n = 6000, 1, 3
		}
		if idle != want || rep.SilentCPUs != silent || len(rep.CPUs) != n {
			t.Errorf("option %v: idle %d over %d CPUs, %d silent; want %d over %d, %d", on, idle, len(rep.CPUs), rep.SilentCPUs, want, n, silent)
		}
		if on && rep.CPUs[2].CPU != 2 {
			t.Errorf("CPUs not in order: %+v", rep.CPUs)
		}
	}
}
