package whatif

import (
	"fmt"
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// perf record moves itself through every CPU at its start (and back at
// its end) by waking each CPU's stopper: the extraction turns those
// wakeups into EdgeMove edges with the destination the trace's
// sched_migrate_task gives. Expected from `perf script` on the
// fixtures: guest-P's perf (pid 326) goes 0 -> 1 at 9.545221 (its first
// switch on CPU 0 seen) and 1 -> 0 at 10.156912; guest-A's perf (pid
// 1098) 0 -> 1 -> ... -> 7 from 9.459014 (CPUs 1-7 not yet switched in
// the trace: its runs there are inferred from the migrations) and 7 -> 0
// at 9.964646, and perf-exec (pid 1099, later hackbench), exec'ing, 6 ->
// 3 at 9.463865 (sched_exec). Nothing else in these traces is moved by a
// stopper it woke.
func TestStopperMoveFixtures(t *testing.T) {
	for _, c := range []struct {
		path string
		want string
	}{
		{"../fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data", "[perf->1 perf->0]"},
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/hackbench.perf.data", "[perf->1 perf->2 perf->3 perf->4 perf->5 perf->6 perf->7 perf->0 hackbench->3]"},
	} {
		w, _ := extractFixture(t, c.path)
		var got []string
		for _, e := range w.Edges {
			if e.Kind == EdgeMove {
				got = append(got, fmt.Sprintf("%s->%d", w.Tasks[e.Waker].Comm, e.Target))
			}
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s: moves %s, want %s", c.path, s, c.want)
		}
	}
}

// switchLog records the sched_switch and sched_migrate_task rows of a
// replay as "prev(state)>next" and "move pid from>to".
type switchLog struct{ rows []string }

func (l *switchLog) Emit(e *timeline.Event) error {
	switch e.Kind {
	case timeline.SchedSwitch:
		l.rows = append(l.rows, fmt.Sprintf("%s(%s)>%s", e.Str(timeline.PrevComm), e.Str(timeline.PrevState), e.Str(timeline.NextComm)))
	case timeline.SchedMigrateTask:
		l.rows = append(l.rows, fmt.Sprintf("move %s %d>%d", e.Str(timeline.Comm), e.Int(timeline.OrigCPU), e.Int(timeline.DestCPU)))
	}
	return nil
}

// Active balancing as the output shows it, by hand: CPU 1 runs x alone,
// the idle CPU 0 has the stopper push it. The kernel's trace shows x
// switched out for CPU 1's stopper (migration/1), the move, and the
// stopper switching to idle (state S); the replay names the stopper where
// the workload has that thread. Without it the CPU goes to idle at once,
// as before. (CPU 0, idle, takes x at once: no idle-exit delay here.)
// CPU 1 then goes idle the kernel's way: __schedule after the stopper,
// newidle_balance, do_idle.
func TestActiveBalanceShowsStopper(t *testing.T) {
	for _, c := range []struct {
		stopper bool
		want    []string
	}{
		{true, []string{"x(R)>migration/1", "move x 1>0", "swapper/0(R)>x", "migration/1(S)>swapper/1"}},
		{false, []string{"x(R)>swapper/1", "move x 1>0", "swapper/0(R)>x"}},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		x := b.task("x", 120, 1, true, CauseStart, 10*ms)
		if c.stopper {
			st := b.task("migration/1", 0, 1, false, CauseArrival, ms)
			b.w.Tasks[st].Activations[0].ReleaseNS = t0 + 500*ms
		}
		log := &switchLog{}
		s, err := New(b.done(t), testConfig(), Tee{newChecker(t), log})
		if err != nil {
			t.Fatal(err)
		}
		r1, tk := s.cpus[1], s.tasks[x]
		s.now = 100 * ms
		s.startActivation(tk, 0)
		s.enqueue(r1, tk, enqStart)
		s.takeCurr(r1, tk)
		s.activeBalanceStop(1, 0)
		if !slices.Equal(log.rows, c.want) {
			t.Errorf("stopper in the workload %v: %q, want %q", c.stopper, log.rows, c.want)
		}
		// CPU 1, left with nothing, schedules as the stopper sleeps:
		// newidle_balance (nothing to pull), then the idle task, whose
		// tick stops (the nohz mask).
		if !s.nohz.idle[1] || r1.tickOn || r1.idleSince != s.now {
			t.Errorf("stopper in the workload %v: CPU 1 in the nohz mask %v, tick on %v, idle since %d; want true, false, %d", c.stopper, s.nohz.idle[1], r1.tickOn, r1.idleSince, s.now)
		}
	}
}
