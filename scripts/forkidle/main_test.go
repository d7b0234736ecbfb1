package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const us = 1000

func sw(t int64, cpu, prev int32, state string, next int32) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: timeline.SchedSwitch}
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PrevPID, int64(prev))
	e.SetStr(timeline.PrevState, state)
	e.SetInt(timeline.NextPID, int64(next))
	return e
}

func wake(t int64, kind timeline.Kind, cpu, pid, target int32) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: kind}
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetInt(timeline.TargetCPU, int64(target))
	return e
}

// A hand-worked schedule on two CPUs. Parent 10 runs on CPU 0, CPU 1 is
// idle. It forks 20 onto CPU 1 at 2 ms (the other CPU idle; not kept),
// switched in 100 µs later (a fork's idle exit); 20 sleeps. It forks 21
// onto CPU 1 at 3 ms (idle; not kept) and, with 21 not yet switched in,
// 22 onto itself (the other CPU pending; kept); 21 runs at 3.2 ms (a
// fork's idle exit, 200 µs). 10 wakes 20 onto CPU 1 while 21 runs there
// (no idle exit); 21 blocks to 20, which later sleeps. A timer on idle
// CPU 1 wakes 20 at 7 ms, in at 7.06 ms (a local idle exit, 60 µs); 10
// wakes 24 onto CPU 1 at 7.02 ms, with 20 pending there (no idle exit).
// At 8 ms, with CPU 1 busy, 10 forks 23 onto itself (kept). Last, 10
// wakes 25 onto idle CPU 1 at 9 ms and a migration moves it to busy CPU
// 0: no idle exit either.
func TestHandWorked(t *testing.T) {
	evs := []*timeline.Event{
		sw(1000*us, 0, 0, "R", 10),
		sw(1000*us, 1, 61, "S", 0),
		wake(2000*us, timeline.SchedWakeupNew, 0, 20, 1),
		sw(2100*us, 1, 0, "R", 20),
		sw(2500*us, 1, 20, "S", 0),
		wake(3000*us, timeline.SchedWakeupNew, 0, 21, 1),
		wake(3050*us, timeline.SchedWakeupNew, 0, 22, 0),
		sw(3200*us, 1, 0, "R", 21),
		wake(4000*us, timeline.SchedWaking, 0, 20, 1),
		sw(5000*us, 1, 21, "S", 20),
		sw(6000*us, 1, 20, "S", 0),
		wake(7000*us, timeline.SchedWaking, 1, 20, 1),
		wake(7020*us, timeline.SchedWaking, 0, 24, 1),
		sw(7060*us, 1, 0, "R", 20),
		wake(8000*us, timeline.SchedWakeupNew, 0, 23, 0),
		sw(8500*us, 1, 20, "R", 24),
		sw(8600*us, 1, 24, "S", 20),
		sw(8700*us, 1, 20, "S", 0),
		wake(9000*us, timeline.SchedWaking, 0, 25, 1),
	}
	mig := &timeline.Event{Time: 9000 * us, Kind: timeline.SchedMigrateTask}
	mig.SetInt(timeline.CPU, 0)
	mig.SetInt(timeline.PID, 25)
	mig.SetInt(timeline.OrigCPU, 1)
	mig.SetInt(timeline.DestCPU, 0)
	evs = append(evs, mig, sw(9500*us, 0, 10, "R", 25))
	c := &column{}
	r := &reader{col: c, curr: map[int32]int32{}, wake: map[int32]pending{}}
	for _, e := range evs {
		r.event(e)
	}
	if !slices.Equal(c.exits[exitFork], []int64{100 * us, 200 * us}) || !slices.Equal(c.exits[exitLocal], []int64{60 * us}) || len(c.exits[exitRemote]) != 0 {
		t.Errorf("idle exits: forks %v, local %v, remote %v; want [100 200] µs, [60] µs, none", c.exits[exitFork], c.exits[exitLocal], c.exits[exitRemote])
	}
	if c.forks != [nForkStates]int{1, 1, 2} || c.kept != [nForkStates]int{1, 1, 0} {
		t.Errorf("forks by state %v, kept %v; want busy 1, pending 1, idle 2, kept 1, 1, 0", c.forks, c.kept)
	}
	var b bytes.Buffer
	report(&b, []*column{c})
	if !strings.Contains(b.String(), "|      4  50.0%") {
		t.Errorf("report lacks 4 forks, 50 %% kept:\n%s", b.String())
	}
}
