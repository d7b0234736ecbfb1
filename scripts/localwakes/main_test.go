package main

import (
	"path/filepath"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

func sw(t int64, cpu, prev int32, prevComm, state string, next int32, nextComm string) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: timeline.SchedSwitch}
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PrevPID, int64(prev))
	e.SetStr(timeline.PrevComm, prevComm)
	e.SetStr(timeline.PrevState, state)
	e.SetInt(timeline.NextPID, int64(next))
	e.SetStr(timeline.NextComm, nextComm)
	return e
}

func waking(t int64, cpu, pid int32, comm string) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: timeline.SchedWaking}
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, comm)
	return e
}

// A hand-worked schedule on two CPUs: three tasks of group "w" take turns
// on CPU 0; C blocks twice and is woken on CPU 0 while another w runs,
// once 50 ns and once 0.3 ms before it preempts it; the running task had
// waited longest (rank 0) the first time and second longest (rank 1) the
// second. A kernel thread woken on CPU 0 but switched in on CPU 1 is not
// local and counts nowhere.
func TestHandWorked(t *testing.T) {
	evs := []*timeline.Event{
		sw(0, 0, 0, "swapper/0", "R", 1, "w"),
		sw(100, 0, 1, "w", "R", 2, "w"),                 // A runnable, out at 100
		sw(200, 0, 2, "w", "R", 3, "w"),                 // B runnable, out at 200
		sw(300, 0, 3, "w", "S", 1, "w"),                 // C blocks; A waited longest: rank 0
		waking(350, 0, 3, "w"),                          // C woken while A runs
		waking(360, 0, 4, "kthread/0"),                  // not C's group, not blocked here
		sw(400, 0, 1, "w", "R", 3, "w"),                 // C preempts A after 50 ns
		sw(500, 1, 0, "swapper/1", "R", 4, "kthread/0"), // switched in elsewhere
		sw(1000, 0, 3, "w", "S", 1, "w"),                // C blocks; B (out at 200) waited longer than A (400): A rank 1
		waking(1100, 0, 3, "w"),
		sw(301100, 0, 1, "w", "R", 3, "w"), // 0.3 ms
	}
	c := newCounter()
	c.reset(0)
	var fr fileRow
	per := class{"w", "w", "R"}
	for _, e := range evs {
		c.event(e, per, &fr)
	}
	got := c.classes[per]
	if got == nil || got.n[0] != 2 || got.fast[0][0] != 1 || got.fast[1][0] != 2 {
		t.Fatalf("w > w, R: %+v; want 2 wakeups, 1 under 0.2 ms, 2 under 0.4 ms", got)
	}
	if len(c.classes) != 1 {
		t.Errorf("classes %v; want only w > w, R (the kernel thread ran on another CPU)", c.classes)
	}
	if fr.n != 2 || fr.fast != 1 {
		t.Errorf("per-file row %+v; want 1 of 2", fr)
	}
	for rk, want := range map[int][3]int{0: {1, 1, 1}, 1: {1, 0, 1}} {
		r := c.ranks[rk]
		if r == nil || r.n[0] != want[0] || r.fast[0][0] != want[1] || r.fast[1][0] != want[2] {
			t.Errorf("rank %d: %+v; want %v", rk, r, want)
		}
	}
	if len(c.ranks) != 2 {
		t.Errorf("ranks %v; want ranks 0 and 1 only", c.ranks)
	}
}

// A committed 6.12 recording (guest-M r3 schbench), against a reader of
// perf script's text applying the same definition (session 32,
// throw-away, 2026-12-02; perf 6.1's `perf script -F
// comm,tid,cpu,time,event,trace`): wakeups, and those under 0.2 and 0.4
// ms, for four classes.
func TestAgainstPerfScript(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "kernels", "v6.12", "guest-M-1s1c2t", "r3", "schbench.perf.data.gz")
	c := newCounter()
	if err := c.file(path, 0, class{}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[class][3]int{
		{"schbench-worker", "schbench-worker", "R"}: {68, 21, 26},
		{"schbench-worker", "schbench-msg", "S"}:    {17, 0, 15},
		{"schbench-worker", "schbench-msg", "R"}:    {42, 7, 18},
		{"schbench-msg", "schbench-worker", "S"}:    {18, 11, 14},
	} {
		g := c.classes[k]
		if g == nil || g.n[0] != want[0] || g.fast[0][0] != want[1] || g.fast[1][0] != want[2] {
			t.Errorf("%v: %+v; perf script gives %v", k, g, want)
		}
	}
}

func runtime(t int64, cpu, pid int32, vruntime int64) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: timeline.SchedStatRuntime}
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetInt(timeline.Vruntime, vruntime)
	return e
}

// -gap by hand, granularity 2 ms, on CPU 0: W (1) last recorded at
// vruntime 10 ms. C (2), last at 7 ms there, is woken (gap 3 ms: at or
// above) and preempts W; D (3), last at 9 ms there, is woken (gap 1 ms:
// below) and runs when W blocks; E (4), last recorded on CPU 1, is woken
// on CPU 0 and runs there: no gap (its vruntime is another queue's).
func TestGapByHand(t *testing.T) {
	const ms = 1000000
	evs := []*timeline.Event{
		sw(0, 0, 0, "swapper/0", "R", 1, "w"),
		runtime(10, 0, 2, 7*ms),
		runtime(20, 0, 3, 9*ms),
		runtime(30, 1, 4, 1*ms),
		runtime(40, 0, 1, 10*ms),
		waking(50, 0, 2, "c"),
		sw(60, 0, 1, "w", "R", 2, "c"),
		sw(70, 0, 2, "c", "S", 1, "w"),
		runtime(80, 0, 1, 10*ms+40),
		waking(90, 0, 3, "d"),
		waking(95, 0, 4, "e"),
		sw(100, 0, 1, "w", "S", 3, "d"),
		sw(500000, 0, 3, "d", "S", 4, "e"),
	}
	c := newCounter()
	c.reset(0)
	c.gran = 2 * ms
	var fr fileRow
	for _, e := range evs {
		c.event(e, class{}, &fr)
	}
	want := map[gapKey]int{{1, "R"}: 1, {0, "S"}: 1}
	if len(c.gaps) != len(want) {
		t.Fatalf("gap rows %v, want %v", c.gaps, want)
	}
	for k, n := range want {
		if g := c.gaps[k]; g == nil || g.n[0] != n || g.fast[0][0] != n {
			t.Errorf("%+v: %+v, want %d, all under 0.2 ms", k, g, n)
		}
	}
	// E is a local wakeup all the same, switched in when D blocked.
	if n := c.classes[class{"w", "e", "S"}]; n == nil || n.n[0] != 1 {
		t.Errorf("w > e, S: %+v, want 1", n)
	}
}
