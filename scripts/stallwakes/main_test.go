package main

import (
	"cmp"
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const ms = 1000000

// A hand-worked schedule on two CPUs, 0 to 30 ms, both busy throughout:
// W runs on CPU 0 and ticks every 4 ms; X runs on CPU 1, ticks at 4 ms,
// then nothing until 20 ms (a 16 ms stall), ticks at 20, 24 and 28. W
// wakes D onto CPU 1 at 2 ms (before the stall; a balancer moves it at
// 3 ms, before it runs), A onto CPU 1 at 10 ms (inside the stall), C at
// 12 ms (placed on W's own CPU by select_task_rq's migrate: not remote),
// E at 14 ms (placed on CPU 0 too, its migrate written 1 ms later, after a
// host stall of the waker inside try_to_wake_up: still CPU 0's next
// record, so not remote either) and B onto CPU 1 at 22 ms (the 20–24 ms stretch is no stall). A
// preempts X at 24 ms (waited 14 ms, 10 of them in the stall), B runs at
// 28 ms (6 ms, none), C and E never run there. So: 3 remote wakeups onto a busy CPU,
// 1 landing in a stall (6 ms of it before, its rest 10 ms: not shorter);
// waits 20 ms, 10 in stalls; busy time 60 ms, 16 in stalls; with both CPUs
// busy, 14 ms with none stalled and 16 with one. A second run has X's
// stall end at 12 ms instead (a record there): A's landing then has 2 ms
// of rest against 6 before it.
func TestHandWorked(t *testing.T) {
	var evs []ev
	sw := func(at int64, cpu, next int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedSwitch, pid: next})
	}
	tick := func(at int64, cpu int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedStatRuntime})
	}
	wake := func(at int64, cpu, pid, target int32) {
		evs = append(evs, ev{t: at, cpu: cpu, kind: timeline.SchedWaking, pid: pid, target: target})
	}
	const w, x, a, b, c, d, e = 10, 11, 12, 13, 14, 15, 16
	sw(0, 0, w)
	sw(0, 1, x)
	wake(2*ms, 0, d, 1)
	evs = append(evs, ev{t: 3 * ms, cpu: 1, kind: timeline.SchedMigrateTask, pid: d, target: 0})
	tick(4*ms, 0)
	tick(4*ms, 1)
	tick(8*ms, 0)
	wake(10*ms, 0, a, 1)
	wake(12*ms, 0, c, 1)
	evs = append(evs, ev{t: 12*ms + 1000, cpu: 0, kind: timeline.SchedMigrateTask, pid: c, target: 0})
	wake(14*ms, 0, e, 1)
	evs = append(evs, ev{t: 15 * ms, cpu: 0, kind: timeline.SchedMigrateTask, pid: e, target: 0})
	tick(16*ms, 0)
	tick(20*ms, 0)
	tick(20*ms, 1)
	wake(22*ms, 0, b, 1)
	tick(24*ms, 0)
	sw(24*ms, 1, a)
	tick(28*ms, 0)
	sw(28*ms, 1, b)
	sw(30*ms, 0, 0)
	sw(30*ms, 1, 0)

	withRecordAt12 := append(slices.Clone(evs), ev{t: 12 * ms, cpu: 1, kind: timeline.SchedStatRuntime})
	slices.SortStableFunc(withRecordAt12, func(a, b ev) int { return cmp.Compare(a.t, b.t) })

	got := measure(evs, 5*ms)
	want := tally{remote: 3, inStall: 1, waited: 2, waitNS: 20 * ms, stallNS: 10 * ms, busyNS: 60 * ms, busyIn: 16 * ms}
	if got.remote != want.remote || got.inStall != want.inStall || got.waited != want.waited || got.waitNS != want.waitNS ||
		got.stallNS != want.stallNS || got.busyNS != want.busyNS || got.busyIn != want.busyIn {
		t.Errorf("got %+v\nwant %+v", *got, want)
	}
	if got.restShorter != 0 || len(got.restNS) != 1 || got.restNS[0] != 10*ms || medianMS(got.restNS) != "10.00" {
		t.Errorf("landing's rest: %d shorter, rests %v; want 0 shorter, [10 ms]", got.restShorter, got.restNS)
	}
	if g := measure(withRecordAt12, 5*ms); g.inStall != 1 || g.restShorter != 1 || len(g.restNS) != 1 || g.restNS[0] != 2*ms {
		t.Errorf("stall ending at 12 ms: %d landings, %d with a shorter rest, rests %v; want 1, 1, [2 ms]", g.inStall, g.restShorter, g.restNS)
	}
	if len(got.stalledAt) != 3 || got.stalledAt[0] != 14*ms || got.stalledAt[1] != 16*ms || got.stalledAt[2] != 0 {
		t.Errorf("time with both CPUs busy by CPUs stalled %v, want [14 ms, 16 ms, 0]", got.stalledAt)
	}
}

// Stalls against the other CPUs' switches to idle, by hand on three CPUs
// busy from 0 ms: CPU 0 ticks at 4, 8, 16 and 20 ms (a stall 8–16, its
// midpoint 12), CPU 1 at 4 and 20 (a stall 4–20, midpoint 12), CPU 2
// runs a task from 0, ticks at 4 and 8 ms and switches to idle at
// 11.8 ms, runs one from 15 ms to 16.1 (idle 0.1 ms after CPU 0's stall
// ended: not before it) and from 19 ms to 19.9. CPU 1's stall ends 0.1
// ms after CPU 2 went idle: ended with it; CPU 0's 4.2 ms after, not.
// Both midpoints (12 ms) come 0.2 ms after CPU 2's first switch to idle,
// within the 0.3 ms window.
func TestStallEndsAfterIdle(t *testing.T) {
	var evs []ev
	at := func(ms10 int64, cpu int32, kind timeline.Kind, pid int32) {
		evs = append(evs, ev{t: ms10 * ms / 10, cpu: cpu, kind: kind, pid: pid})
	}
	for c := int32(0); c < 3; c++ {
		at(0, c, timeline.SchedSwitch, 10+c)
	}
	for _, t := range []int64{40, 80, 160, 200} {
		at(t, 0, timeline.SchedStatRuntime, 0)
	}
	at(40, 1, timeline.SchedStatRuntime, 0)
	at(40, 2, timeline.SchedStatRuntime, 0)
	at(80, 2, timeline.SchedStatRuntime, 0)
	at(118, 2, timeline.SchedSwitch, 0)
	at(150, 2, timeline.SchedSwitch, 14)
	at(161, 2, timeline.SchedSwitch, 0)
	at(190, 2, timeline.SchedSwitch, 13)
	at(199, 2, timeline.SchedSwitch, 0)
	at(200, 1, timeline.SchedStatRuntime, 0)
	slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	got := measure(evs, 5*ms)
	if got.stalls != 2 || got.endAfterIdle != 1 || got.midAfterIdle != 2 {
		t.Errorf("stalls %d, ending after another CPU's switch to idle %d, at their midpoints %d; want 2, 1, 2", got.stalls, got.endAfterIdle, got.midAfterIdle)
	}
}
