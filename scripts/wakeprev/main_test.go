package main

import (
	"os"
	"testing"
)

// A hand-made 4.19-style text trace (testdata/wakes.txt), booked by hand:
// before any sched_overutilized, b on CPU 0 wakes a, which slept on CPU
// 0, onto CPU 0 (prev, the logging CPU; CPUs 1-3 of the one LLC never ran
// a task: idle); once overutilized, c on CPU 1 wakes a (prev 0) onto CPU
// 1 (the logging CPU, not prev); the idle task on CPU 2 logs a's wakeup
// (prev 1) onto CPU 3 (elsewhere), the idle task on CPU 0 c's (prev 1)
// onto CPU 1 (prev, another CPU).
func TestCountByHand(t *testing.T) {
	llc, err := llcOf("sockets=1,cores=4")
	if err != nil {
		t.Fatal(err)
	}
	got, err := count("testdata/wakes.txt", llc)
	if err != nil {
		t.Fatal(err)
	}
	var want tally
	want.haveOU = true
	want.n[0][0][prevIsWaker] = 1
	want.idleSibling[0] = 1
	want.n[2][0][logOnly] = 1
	want.n[2][1][elsewhere] = 1
	want.n[2][1][prevOnly] = 1
	if got != want {
		t.Errorf("counts %+v\nwant %+v", got, want)
	}
}

// LISA's 4.19 text trace on its Juno r0 (FIDELITY.md round 107), the
// counts a separate reader of the text (a throw-away Python script)
// found: 643 wakeups by a task onto the wakee's previous CPU where the
// waker ran, 134 of them before the trace's first sched_overutilized or
// while it said 0, 509 while overutilized; 374 of the 643 with another
// CPU of the waker's cluster idle.
func TestLISATextTrace(t *testing.T) {
	const path = "../../../shared/fixtures/public/lisa/tests/assets/trace_txt/trace.txt"
	if _, err := os.Stat(path); err != nil {
		t.Skip("../shared is absent")
	}
	llc, err := llcOf("juno-r0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := count(path, llc)
	if err != nil {
		t.Fatal(err)
	}
	calm := got.n[0][0][prevIsWaker] + got.n[1][0][prevIsWaker]
	if calm != 134 || got.n[2][0][prevIsWaker] != 509 {
		t.Errorf("task wakeups on prev = the waker's CPU: %d not overutilized, %d overutilized; want 134 and 509", calm, got.n[2][0][prevIsWaker])
	}
	if n := got.idleSibling[0] + got.idleSibling[1] + got.idleSibling[2]; n != 374 {
		t.Errorf("%d of them beside an idle CPU of the cluster, want 374", n)
	}
}
