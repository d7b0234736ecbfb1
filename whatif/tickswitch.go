package whatif

import "github.com/schedreplay/replay/timeline"

// The tick's switch delay: when the scheduler tick ends the running task's
// slice (CFS's check_preempt_tick, EEVDF's used-up request), the tick only
// sets TIF_NEED_RESCHED; the switch comes when the interrupt returns, after
// its softirqs (the timers, the tick's load balancing). The traces show
// that return as the gap between the tick's record (the hard-IRQ
// sched_stat_runtime of the running task) and that task's switch-out in
// state R: 30-220 µs on the 6.12 guests (medians 58-121 µs per
// recording), about 230 µs on the 6.1 guests, 0 in a replay that switches
// at the tick's instant. The gap is run by the old task, in its new
// request under EEVDF. Not all of it is the task's: the kernel's update at
// the switch charges the task about three quarters of the gap, the rest
// (from that update to the switch) being the next task's charge
// (switchcharge.go; round 62 had taken it for interrupt time, round 63
// found no interrupt time left out); the pool keeps the charged part
// (FIDELITY.md rounds 62, 63).

// tickSwitchTally collects those gaps from a trace, with the task's
// updates within each: a tick record of the running task, then its
// switch-out in state R on that CPU within a quarter tick, with no wakeup
// aimed at that CPU between (a wakeup's preemption is another delay:
// Workload.PreemptWakeNS).
type tickSwitchTally struct {
	tickNS int64
	at     []int64 // per CPU: the last tick record since the switch, -1: none
	pid    []int32
	woke   []bool
	ran    []int64 // the task's own updates since the tick record
	// charged: the part of each gap the kernel charged to the task (its
	// sched_stat_runtime rows between the tick record and the switch;
	// the rest, from its last update to the switch, is the next task's
	// charge: switchcharge.go).
	charged []int64
}

func newTickSwitchTally(tickNS int64) *tickSwitchTally {
	return &tickSwitchTally{tickNS: tickNS}
}

func (t *tickSwitchTally) grow(c int32) {
	for int(c) >= len(t.at) {
		t.at, t.pid, t.woke, t.ran = append(t.at, -1), append(t.pid, 0), append(t.woke, false), append(t.ran, 0)
	}
}

// mark notes a wakeup aimed at CPU c.
func (t *tickSwitchTally) mark(e *timeline.Event, col timeline.Col) {
	if !e.IsSet(col) {
		return
	}
	if c := e.Int32(col); c >= 0 && int(c) < len(t.at) {
		t.woke[c] = true
	}
}

// lost forgets every CPU's pending tick: the records lost may have held
// the switch or a wakeup.
func (t *tickSwitchTally) lost() {
	for i := range t.at {
		t.at[i] = -1
	}
}

// observe takes every event of a CPU, in time order; tick: the event is a
// tick record of c (a hard-IRQ sched_stat_runtime that is no enqueue's).
func (t *tickSwitchTally) observe(e *timeline.Event, c int32, tick bool) {
	if c < 0 {
		return
	}
	t.grow(c)
	switch e.Kind {
	case timeline.SchedStatRuntime:
		if tick && e.Int32(timeline.PID) > 0 {
			t.at[c], t.pid[c], t.woke[c], t.ran[c] = e.Time, e.Int32(timeline.PID), false, 0
		} else if t.at[c] >= 0 && e.Int32(timeline.PID) == t.pid[c] {
			t.ran[c] += e.Int(timeline.Runtime)
		}
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		t.mark(e, timeline.TargetCPU)
	case timeline.SchedMigrateTask:
		t.mark(e, timeline.DestCPU)
	case timeline.SchedSwitch:
		st := e.Str(timeline.PrevState)
		if d := e.Time - t.at[c]; t.at[c] >= 0 && !t.woke[c] && e.Int32(timeline.PrevPID) == t.pid[c] &&
			(st == "R" || st == "R+") && d >= 0 && d < t.tickNS/4 {
			t.charged = append(t.charged, min(t.ran[c], d))
		}
		t.at[c] = -1
	}
}
