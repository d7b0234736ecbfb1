package analysis

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A CPU the trace shows idle, whose task then switches out without a
// recorded switch-in (this project's 6.18 VM leaves most switches out of
// idle untraced): the task's own sched_stat_runtime there dates its
// switch-in (update_curr's delta runs from exec_start, which the switch-in
// set), so the CPU counts busy from then, idle before. Without such a
// record, or with one written from another task's context (a remote
// wakeup's update), the run starts at the CPU's last switch, as perf
// sched timehist starts it. By hand: CPU 0 idle from 1,000 ns, task 10's
// record at 5,000 with runtime 1,000 (in from 4,000), its switch-out at
// 5,010, the trace's end at 9,000 (CPU 1 switching there).
func TestLostSwitchInTimedByRuntime(t *testing.T) {
	rt := func(tm int64, pid, common, runtime int64) timeline.Event {
		return ev(tm, timeline.SchedStatRuntime, 0, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.CommonPID, common)
			e.SetInt(timeline.Runtime, runtime)
		})
	}
	for _, tc := range []struct {
		name       string
		mid        []timeline.Event
		busy, idle int64 // CPU 0, from 1,000 to 9,000
		timed      int64
	}{
		{"own record", []timeline.Event{rt(5000, 10, 10, 1000)}, 1010, 6990, 1},
		{"record older than the last switch", []timeline.Event{rt(5000, 10, 10, 9000)}, 4010, 3990, 1},
		{"two records, the first dates it", []timeline.Event{rt(3000, 10, 10, 500), rt(5000, 10, 10, 2000)}, 2510, 5490, 1},
		{"another task's context", []timeline.Event{rt(5000, 10, 11, 1000)}, 4010, 3990, 0},
		{"no record", nil, 4010, 3990, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := []timeline.Event{sw(1000, 0, 10, "S", 0), sw(1000, 1, 12, "S", 0)}
			evs = append(evs, tc.mid...)
			evs = append(evs, sw(5010, 0, 10, "S", 0), sw(9000, 1, 0, "R", 12))
			rep, err := Run(&timeline.SliceReader{Events: evs}, Options{TaskDelays: PerfLatency67})
			if err != nil {
				t.Fatal(err)
			}
			var c0 CPUStats
			for _, c := range rep.CPUs {
				if c.CPU == 0 {
					c0 = c
				}
			}
			if c0.BusyNS != tc.busy || c0.IdleNS != tc.idle {
				t.Errorf("CPU 0 busy %d idle %d ns, want %d and %d", c0.BusyNS, c0.IdleNS, tc.busy, tc.idle)
			}
			if rep.RunsTimedByRuntime != tc.timed {
				t.Errorf("runs timed by runtime %d, want %d", rep.RunsTimedByRuntime, tc.timed)
			}
		})
	}
}

// The same CPU 0 beside a busy CPU 1 with a task waiting there from 1,000
// to 9,000: CPU 0 is idle while runnable until the lost switch-in its
// task's record dates (4,000) and again after its switch-out (5,010):
// 3,000 + 3,990 ns; without the record, as the trace shows it, idle
// throughout: 8,000.
func TestLostSwitchInIdleWhileRunnable(t *testing.T) {
	for _, tc := range []struct {
		name string
		mid  []timeline.Event
		want int64
	}{
		{"own record", []timeline.Event{ev(5000, timeline.SchedStatRuntime, 0, func(e *timeline.Event) {
			e.SetInt(timeline.PID, 10)
			e.SetInt(timeline.CommonPID, 10)
			e.SetInt(timeline.Runtime, 1000)
		})}, 6990},
		{"no record", nil, 8000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := []timeline.Event{
				sw(1000, 0, 10, "S", 0),
				sw(1000, 1, 11, "S", 12),
				ev(1000, timeline.SchedWaking, 1, func(e *timeline.Event) { e.SetInt(timeline.PID, 13); e.SetInt(timeline.TargetCPU, 1) }),
			}
			evs = append(evs, tc.mid...)
			evs = append(evs, sw(5010, 0, 10, "S", 0), sw(9000, 1, 12, "R", 13))
			rep, err := Run(&timeline.SliceReader{Events: evs}, Options{TaskDelays: PerfLatency67})
			if err != nil {
				t.Fatal(err)
			}
			if rep.IdleWhileRunnableTotal != tc.want {
				t.Errorf("idle while runnable %d ns, want %d", rep.IdleWhileRunnableTotal, tc.want)
			}
		})
	}
}

// The real trace that shows it at its worst (fixtures/local-6.18/workloads,
// README): this machine's kernel leaves CPU 1's switches out of idle
// untraced. perf sched timehist -s on it: CPU 0 idle 264.291 ms, "CPU 1
// idle entire time window", total run time 274.383 ms; perf script's 684
// sched_stat_runtime records add up to 18,067,456 ns. The busy time must
// lie between that sum and 5 % over it (each run's last record comes a
// few µs before its switch-out), CPU 0's idle time as timehist's.
func TestLostSwitchInsOnARealTrace(t *testing.T) {
	rep := runPerfFixture(t, "../fixtures/local-6.18/workloads/cyclictest-t2.perf.data")
	const runtimeSum = 18067456
	var busy int64
	for _, c := range rep.CPUs {
		busy += c.BusyNS
		if c.CPU == 0 && (c.IdleNS < 264291000 || c.IdleNS >= 264292000+1000) {
			t.Errorf("CPU 0 idle %d ns, want timehist's 264.291 ms", c.IdleNS)
		}
	}
	if busy < runtimeSum || busy > runtimeSum*105/100 {
		t.Errorf("busy %d ns, want between the records' %d and 5 %% over", busy, runtimeSum)
	}
	if rep.RunsTimedByRuntime < 200 || rep.RunsTimedByRuntime > 239 {
		t.Errorf("%d runs timed by their records, want most of CPU 1's 239 switches to idle", rep.RunsTimedByRuntime)
	}
}
