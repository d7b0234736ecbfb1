package main

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

func ev(t int64, kind timeline.Kind) *timeline.Event {
	e := &timeline.Event{Time: t, Kind: kind}
	e.SetInt(timeline.CPU, 0)
	return e
}

func sw(t int64, prev int32, state string, next int32) *timeline.Event {
	e := ev(t, timeline.SchedSwitch)
	e.SetInt(timeline.PrevPID, int64(prev))
	e.SetStr(timeline.PrevState, state)
	e.SetInt(timeline.PrevPrio, 120)
	e.SetInt(timeline.NextPID, int64(next))
	e.SetInt(timeline.NextPrio, 120)
	return e
}

func runtime(t int64, pid int32, ns int64, tick bool) *timeline.Event {
	e := ev(t, timeline.SchedStatRuntime)
	e.SetInt(timeline.PID, int64(pid))
	e.SetInt(timeline.Runtime, ns)
	if tick {
		e.SetInt(timeline.CommonFlags, 0x08)
	}
	return e
}

func wake(t int64, kind timeline.Kind, pid int32, comm string) *timeline.Event {
	e := ev(t, kind)
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, comm)
	e.SetInt(timeline.Prio, 120)
	e.SetInt(timeline.TargetCPU, 0)
	return e
}

// on1 moves a hand-made event (and its target) to CPU 1.
func on1(e *timeline.Event) *timeline.Event {
	e.SetInt(timeline.CPU, 1)
	if e.IsSet(timeline.TargetCPU) {
		e.SetInt(timeline.TargetCPU, 1)
	}
	return e
}

// migrate is a balancer's sched_migrate_task of pid, written on the
// pulling CPU (to).
func migrate(t int64, pid int32, comm string, from, to int64) *timeline.Event {
	e := ev(t, timeline.SchedMigrateTask)
	e.SetInt(timeline.CPU, to)
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, comm)
	e.SetInt(timeline.Prio, 120)
	e.SetInt(timeline.OrigCPU, from)
	e.SetInt(timeline.DestCPU, to)
	return e
}

// abRun is the start several hand-worked schedules share, on CPU 0
// (vruntimes in µs): A forked onto the empty queue (v 0, deadline 500)
// and run; B forked at 100 after A's update (A v 100; B at V 100,
// deadline 600); A's next update at 200 (v 200).
func abRun() []*timeline.Event {
	return []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "a"),
		sw(0, 0, "R", 1),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 2, "b"),
		runtime(200*us, 1, 100*us, false),
	}
}

// aDelayedBRuns: abRun, then A's block at 200, not eligible (V 150):
// delayed; B picked.
func aDelayedBRuns() []*timeline.Event {
	return append(abRun(), sw(200*us, 1, "S", 2))
}

// twoCPUStart is the start two hand-worked schedules share (vruntimes
// in µs): A forked onto CPU 0's empty queue (v 0, deadline 500) and run,
// N onto CPU 1's; at 50 N's update (v 50) and task 4, named fourth,
// forked onto CPU 1 at V 50 (deadline 550), queued; at 100 A's update
// (v 100) and B forked onto CPU 0 at V 100 (deadline 600).
func twoCPUStart(fourth string) []*timeline.Event {
	return append(aAndOnCPU1(3, "n"),
		on1(runtime(50*us, 3, 50*us, false)),
		on1(wake(50*us, timeline.SchedWakeupNew, 4, fourth)),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 2, "b"),
	)
}

// aAndOnCPU1: A forked onto CPU 0's empty queue and run, and task pid
// (comm) onto CPU 1's.
func aAndOnCPU1(pid int32, comm string) []*timeline.Event {
	return []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "a"),
		sw(0, 0, "R", 1),
		on1(wake(0, timeline.SchedWakeupNew, pid, comm)),
		on1(sw(0, 0, "R", pid)),
	}
}

// abcForked: abRun, then C forked at 200 (V 150, deadline 650).
func abcForked() []*timeline.Event {
	return append(abRun(), wake(200*us, timeline.SchedWakeupNew, 3, "c"))
}

const us = 1000

// bBlockedOn1: aAndOnCPU1 with B (pid 2), which runs 50 µs alone on CPU
// 1 and blocks there (lag 0).
func bBlockedOn1() []*timeline.Event {
	return append(aAndOnCPU1(2, "b"),
		on1(runtime(50*us, 2, 50*us, false)),
		on1(sw(50*us, 2, "S", 0)),
	)
}

// statSleep is a sched_stat_sleep for pid written on cpu, the sleep
// delay ns long.
func statSleep(at int64, cpu, pid int32, delay int64) *timeline.Event {
	e := ev(at, timeline.SchedStatSleep)
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetInt(timeline.Delay, delay)
	return e
}

// wakingFrom1 is a sched_waking of pid for CPU 0 written on CPU 1.
func wakingFrom1(at int64, pid int32, comm string) *timeline.Event {
	e := wake(at, timeline.SchedWaking, pid, comm)
	e.SetInt(timeline.CPU, 1)
	return e
}

// watchBlocks runs blockEvidence's look-ahead over a hand-worked list.
func watchBlocks(evs []*timeline.Event) *blockWatch {
	w := newBlockWatch()
	for _, e := range evs {
		w.event(e)
	}
	return w
}

// handShadow runs a hand-worked one-CPU schedule (slice 1 ms, HZ 250, no
// schedstats) through a fresh shadow.
func handShadow(evs []*timeline.Event) *shadow {
	s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us}, false)
	s.begin("hand", 0, false)
	for _, e := range evs {
		s.event(e)
	}
	return s
}

// checkPicks compares the shadow's pick tallies (the trace's column) with
// want, by what ended the run.
func checkPicks(t *testing.T, s *shadow, want map[string]picks) {
	t.Helper()
	for k, p := range s.res.picks {
		if p[0] != want[k] {
			t.Errorf("picks %s: %+v, want %+v", k, p[0], want[k])
		}
	}
	if len(s.res.picks) != len(want) {
		t.Errorf("pick kinds %v, want %v", s.res.picks, want)
	}
}

// A hand-worked v6.12 schedule on one CPU, slice 1 ms (vslice 1 ms at
// nice 0), no schedstats. Vruntimes in µs:
//
//	0     A forked onto the empty queue: v 0, deadline 500 (half a slice).
//	100   B forked; A's update first (v 100): B at V = 100, deadline 600.
//	600   tick: A v 600 ≥ 500, renewed to 1600; V = 350, A not
//	      eligible, B is: switch to B (agree, "renewed").
//	700   B blocks after 100 (v 200, V 400, eligible): leaves with lag 200.
//	800   timer wakes B; A's update (v 700); B's lag 200 × (1024+1024)/1024
//	      = 400: v 300, deadline 1300. V = 500: A (protected since its pick
//	      at 700) is not eligible, B is: preempts (predicted and seen);
//	      wakee lag 200, running lag -200.
//	1400  B blocks after 600 (v 900, V 800): not eligible, delayed.
//	      Switch to A (agree).
//	2400  tick: A v 1700 ≥ 1600, renewed to 2700: the schedule that
//	      follows picks B (V 1300, eligible) but it is delayed: it leaves
//	      (lag 400, clipped to 0 by DELAY_ZERO), A is picked again (no
//	      switch).
//	2500  B woken: A's update (v 1800); B at V = 1800, deadline 2800. A
//	      is eligible with the earlier deadline: no preemption predicted.
//	2700  A blocks (v 2000, V 1900: delayed); B runs (agree).
func TestHandWorked(t *testing.T) {
	evs := []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "a"),
		sw(0, 0, "R", 1),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 2, "b"),
		runtime(400*us, 1, 300*us, true),
		runtime(600*us, 1, 200*us, true),
		sw(600*us, 1, "R", 2),
		runtime(700*us, 2, 100*us, false),
		sw(700*us, 2, "S", 1),
		wake(800*us, timeline.SchedWaking, 2, "b"),
		runtime(800*us, 1, 100*us, false),
		sw(800*us, 1, "R", 2),
		runtime(1400*us, 2, 600*us, false),
		sw(1400*us, 2, "S", 1),
		runtime(2400*us, 1, 1000*us, true),
		wake(2500*us, timeline.SchedWaking, 2, "b"),
		runtime(2500*us, 1, 100*us, false),
		runtime(2700*us, 1, 200*us, false),
		sw(2700*us, 1, "S", 2),
	}
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "renewed": {agree: 1}, "block": {agree: 3}, "preempt": {agree: 1}})
	st := s.res.wakes["a running, b woken (from the running task or an interrupt)"]
	if st == nil || st[0].n != 2 || st[0].predicted != 1 || st[0].preempted != 1 || st[0].both != 1 {
		t.Fatalf("wakeups while A runs: %+v; want 2, one predicted and seen to preempt", st)
	}
	if got := st[0].wakeeLag; got[0] != 200*us || got[1] != 0 {
		t.Errorf("wakee lags %v, want [200 µs 0]", got)
	}
	if got := st[0].currLag; got[0] != -200*us || got[1] != 0 {
		t.Errorf("running task's lags %v, want [-200 µs 0]", got)
	}
	if st[0].prot != 0 {
		t.Errorf("%d wakeups found A protected and eligible, want 0 (protected but not eligible at 800, renewed at 2400)", st[0].prot)
	}
	// A runs alone at both wakeups; B's lag was its dequeue's at 800
	// (200 µs), DELAY_ZERO's clip at 2500.
	bySaved := map[string][3]int{}
	for k, v := range st[0].bySaved {
		bySaved[k] = *v
	}
	if want := map[string][3]int{"positive, the running task alone": {1, 1, 1}, "clipped to 0 by DELAY_ZERO, the running task alone": {1, 0, 0}}; !maps.Equal(bySaved, want) {
		t.Errorf("checks (predicted, preempted) by the wakee's saved lag %v, want %v", bySaved, want)
	}
	if b := s.ents[2]; b.d-b.v != 1000*us || b.delayed || !b.onRQ {
		t.Errorf("B: v %d, deadline %d, delayed %v; want a fresh request, runnable", b.v, b.d, b.delayed)
	}
	// B's delayed block at 1400 ended at the pick of 2400; woken at 2500
	// (v 1800), it is picked at 2700 with A delayed beside it: V 1900.
	checkAfterDelay(t, s, map[string]delayStats{"b, " + delayPicked: {lag: []int64{100 * us}, woken: []int64{1100 * us}, since: []int64{1300 * us}}})
	// B's blocks at 700 and 1400 were woken at 800 and 2500; A's at 2700
	// not yet.
	if b := s.res.blocks["b ran 0.1 ms or more"]; b == nil || !slices.Equal(b[0].woken, []int64{100 * us, 1100 * us}) {
		t.Errorf("B's sleeps to its wakings %v, want [100 µs 1100 µs]", b)
	}
	if a := s.res.blocks["a ran 0.1 ms or more"]; a == nil || len(a[0].lag) != 1 || len(a[0].woken) != 0 {
		t.Errorf("A's blocks %v, want one, not woken", a)
	}
}

// checkAfterDelay compares the shadow's picks after a delayed block (the
// trace's column) with want, by group and how the delay ended.
func checkAfterDelay(t *testing.T, s *shadow, want map[string]delayStats) {
	t.Helper()
	got := map[string]delayStats{}
	for k, v := range s.res.afterDelay {
		got[k] = v[0]
	}
	if !maps.EqualFunc(got, want, func(a, b delayStats) bool {
		return slices.Equal(a.lag, b.lag) && slices.Equal(a.woken, b.woken) && slices.Equal(a.since, b.since)
	}) {
		t.Errorf("picks after a delayed block %v, want %v", got, want)
	}
}

// A delayed task that a waking requeues while its lag is still negative
// keeps its vruntime (no DELAY_ZERO placement), and is picked once the
// queue empties. By hand (one CPU, slice 1 ms, vruntimes in µs):
//
//	0-200  aDelayedBRuns: A blocks at 200 (v 200, V 150): delayed; B
//	       (v 100) picked.
//	250    B wakes A before its own update: V (200 + 100) / 2 = 150,
//	       A's lag −50: requeued where it is, v 200. B's update (v 150).
//	300    B's update (v 200); B blocks: V 200, lag 0, eligible:
//	       dequeued. A is picked (agree), alone: lag 0, 100 µs after its
//	       block.
func TestRequeuedWhileNotEligible(t *testing.T) {
	evs := append(aDelayedBRuns(),
		wake(250*us, timeline.SchedWaking, 1, "a"),
		runtime(250*us, 2, 50*us, false),
		runtime(300*us, 2, 50*us, false),
		sw(300*us, 2, "S", 1),
	)
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "block": {agree: 2}})
	if a := s.ents[1]; a.v != 200*us || a.delayed {
		t.Errorf("A: v %d, delayed %v; want 200 µs, requeued", a.v, a.delayed)
	}
	checkAfterDelay(t, s, map[string]delayStats{"a, " + delayRequeuedKept: {lag: []int64{0}, woken: []int64{50 * us}, since: []int64{100 * us}}})
}

// A wakeup that reaches a task while it is still on its CPU, before it
// blocks not eligible (delayed), is applied after the switch's pick, as
// the run queue's lock orders try_to_wake_up's ttwu_runnable after
// __schedule; a delayed task the pick purged is woken afresh. By hand
// (one CPU, slice 1 ms, vruntimes in µs):
//
//	0    A forked onto the empty queue: v 0, deadline 500.
//	100  B forked; A's update (v 100): B at V = 100, deadline 600.
//	200  A's update (v 200), A blocks: V = 150, A not eligible: delayed.
//	     B is picked (agree).
//	300  B's update (v 200); B woken from another CPU while it runs.
//	350  B's update (v 250), B blocks (D): V = 225, not eligible:
//	     delayed. The pick finds A eligible but delayed (purged), then B
//	     alone, delayed (purged): the CPU goes idle (agree). The held
//	     wakeup then places B afresh (its lag clipped to 0).
//	400  B switched in from idle (agree).
//
// Had the wakeup requeued B before the pick, the shadow would have picked
// B at 350 (the case found on a replay of guest-P r3, FIDELITY.md round
// 63).
func TestHeldWakeupOfADelayedTask(t *testing.T) {
	evs := append(aDelayedBRuns(),
		runtime(300*us, 2, 100*us, false),
		wakingFrom1(300*us, 2, "b"),
		runtime(350*us, 2, 50*us, false),
		sw(350*us, 2, "D", 0),
		sw(400*us, 0, "R", 2),
	)
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 2}, "block": {agree: 2}})
	if a := s.ents[1]; a.onRQ {
		t.Errorf("A still queued (delayed %v), want purged", a.delayed)
	}
	if b := s.ents[2]; !b.onRQ || b.delayed || s.rq(0).curr != b {
		t.Errorf("B: on the queue %v, delayed %v; want it running", b.onRQ, b.delayed)
	}
}

// An update_curr in hard-interrupt context that is a remote wakeup's
// enqueue (the wake list's IPI: a waking onto this CPU is waiting for it)
// is not the tick's: the reschedule it asks for is taken at the running
// task's next update that is no enqueue's, as any other, not at once.
// By hand (one CPU, slice 1 ms, vruntimes in µs):
//
//	0    A forked onto the empty queue: v 0, deadline 500.
//	100  B forked; A's update (v 100): B at V = 100, deadline 600.
//	200  A's update (v 200), A blocks: V = 150, A not eligible: delayed.
//	     B is picked (agree).
//	700  C woken from CPU 1; B's update in hard-interrupt context (v 600)
//	     renews B's request and asks for a reschedule. C (lag unknown: 0)
//	     at V = (200 + 600) / 2 = 400.
//	800  E woken by B on this CPU; B's update (v 700), E at V with A
//	     still delayed on the queue: (200 + 700 + 400) / 3 = 433.333.
//	850  B's update (v 750) and the switch: the pick meets A (eligible
//	     at V 445.8, deadline 500) and purges it; then C (400, deadline
//	     1400) before E (433.3, deadline 1433.3): B to C, the shadow's
//	     pick too, counted unverified (C's and E's lags are guesses).
//
// Taken for the tick's, the reschedule would have run at E's waking and
// purged A before E's placement: V (700 + 400) / 2 = 550 (the guest-N r2
// hackbench replay, FIDELITY.md round 113).
func TestIPIEnqueueReschedIsNotTheTicks(t *testing.T) {
	evs := append(aDelayedBRuns(),
		wakingFrom1(700*us, 3, "c"),
		runtime(700*us, 2, 500*us, true),
		wake(800*us, timeline.SchedWaking, 4, "e"),
		runtime(800*us, 2, 100*us, false),
	)
	s := handShadow(evs)
	if c := s.ents[3]; !c.onRQ || c.v != 400*us {
		t.Fatalf("C: queued %v, v %d; want queued at 400 µs", c.onRQ, c.v)
	}
	e, a := s.ents[4], s.ents[1]
	if !e.onRQ || e.v != 433333 {
		t.Errorf("E: queued %v, v %d; want queued at 433333 ns (A still delayed on the queue)", e.onRQ, e.v)
	}
	if !a.onRQ || !a.delayed {
		t.Errorf("A before the schedule's update: queued %v, delayed %v; want both", a.onRQ, a.delayed)
	}
	s.event(runtime(850*us, 2, 50*us, false))
	s.event(sw(850*us, 2, "R", 3))
	if a.onRQ {
		t.Errorf("A after the switch still queued (delayed %v), want purged", a.delayed)
	}
	checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "block": {agree: 1}, "renewed": {unverified: 1}})
	if got := s.rq(0).curr; got != s.ents[3] {
		t.Errorf("running after the switch: %v, want C", got)
	}
}

// A tick's balance pulls tasks before the schedule() its update asked
// for: irq_exit runs the softirq before the interrupt returns. A replay
// writes the tick's update, the pulls and the switch at one instant (the
// engine's order since FIDELITY.md round 111); the pulled task is placed
// with the delayed tasks the pick then purges still queued. By hand (two
// CPUs, slice 1 ms, vruntimes in µs):
//
//	0    CPU 0: A forked (v 0, deadline 500) and run. CPU 1: N forked
//	     and run.
//	50   CPU 1: N's update (v 50); M forked there at V 50 (deadline 550),
//	     queued.
//	100  CPU 0: A's update (v 100); B forked at V 100 (deadline 600).
//	200  A's update (v 200), A blocks: V 150, not eligible: delayed. B
//	     is picked (agree).
//	700  CPU 0's tick: B's update (v 600) renews its request (deadline
//	     1600) and asks for a reschedule. Its softirq pulls M from CPU 1
//	     (lag 0 there: V 50): M at CPU 0's V with A still delayed on the
//	     queue, (200 + 600) / 2 = 400, deadline 900. Then the pick: V
//	     400, A eligible with deadline 500 but delayed: purged; then M
//	     (eligible, deadline 900) before B: B to M (agree).
//
// Settled at the pull, A would have left first and M stood at 600.
func TestTickBalancePullBeforeItsPick(t *testing.T) {
	evs := append(twoCPUStart("m"),
		runtime(200*us, 1, 100*us, false),
		sw(200*us, 1, "S", 2),
		runtime(700*us, 2, 500*us, true),
		migrate(700*us, 4, "m", 1, 0),
		sw(700*us, 2, "R", 4),
	)
	s := handShadow(evs)
	m := s.ents[4]
	if m.v != 400*us || m.d != 900*us {
		t.Errorf("M: v %d, deadline %d; want 400 µs, 900 µs (placed with A still delayed on CPU 0)", m.v, m.d)
	}
	if a := s.ents[1]; a.onRQ {
		t.Errorf("A still queued (delayed %v), want purged by the pick", a.delayed)
	}
	checkPicks(t, s, map[string]picks{"idle": {agree: 2}, "block": {agree: 1}, "renewed": {agree: 1}})
}

// Two balances at one instant, each way: CPU 0's pulls X from CPU 1,
// then CPU 1's pulls B from CPU 0. attach_tasks holds CPU 0's queue until
// X is attached, so B's lag is taken with X there. By hand (two CPUs,
// slice 1 ms, vruntimes in µs):
//
//	0     CPU 0: A forked (v 0) and run. CPU 1: N forked (v 0) and run.
//	50    CPU 1: N's update (v 50); X forked at V 50 (deadline 550).
//	100   CPU 0: A's update (v 100); B forked at V 100.
//	1000  CPU 1: N's update (v 1000). X moved to CPU 0: lag 525 − 50 =
//	      475 there, placed on CPU 0 (A and B at 100, load 2) with its
//	      lag inflated to 475 × 3 / 2 = 712.5: v −612.5. Then B moved to
//	      CPU 1: V on CPU 0 (100 + 100 − 612.5) / 3 = −137.5, B's lag
//	      −237.5.
//
// Detached before X was attached, B's lag would have been 0.
func TestAttachBeforeTheNextDetach(t *testing.T) {
	evs := append(twoCPUStart("x"),
		on1(runtime(1000*us, 3, 950*us, false)),
		migrate(1000*us, 4, "x", 1, 0),
		migrate(1000*us, 2, "b", 0, 1),
	)
	s := handShadow(evs)
	if x := s.ents[4]; !x.onRQ || x.cpu != 0 || x.v != -612500 {
		t.Errorf("X: queued %v on CPU %d at v %d; want queued on CPU 0 at -612500 ns", x.onRQ, x.cpu, x.v)
	}
	if b := s.ents[2]; b.vlag != -237500 {
		t.Errorf("B's lag at its move: %d ns, want -237500 (taken with X attached)", b.vlag)
	}
}

// A wakeup written before a balance's detach from the same queue at the
// same instant is placed first in a timeline without schedstats (a
// replay's, which enqueues at the waking): the detached task's lag is
// taken with the wakee queued. By hand (slice 1 ms, vruntimes in µs):
//
//	0    A forked onto CPU 0's empty queue: v 0, deadline 500.
//	100  A's update (v 100), B forked at V 100 (deadline 600).
//	200  A's update (v 200), C forked at V 150 (deadline 650); A
//	     preempted, B picked (eligible, the earlier deadline).
//	230  B's update (v 130), B blocks eligible (V 160): leaves with lag
//	     30. C picked (A not eligible at V 175).
//	300  C's update (v 220, V 210); C wakes B: placed with its lag
//	     inflated to 30 × 3 / 2 = 45, v 165; V (200 + 220 + 165) / 3 =
//	     195. CPU 1's balance detaches A at the same instant: lag −5.
//
// Detached before B's placement, A's lag would have been +10.
func TestWakeupBeforeTheDetach(t *testing.T) {
	evs := append(abcForked(),
		sw(200*us, 1, "R", 2),
		runtime(230*us, 2, 30*us, false),
		sw(230*us, 2, "S", 3),
		runtime(300*us, 3, 70*us, false),
		wake(300*us, timeline.SchedWaking, 2, "b"),
		migrate(300*us, 1, "a", 0, 1),
	)
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "preempt": {agree: 1}, "block": {agree: 1}})
	if b := s.ents[2]; !b.onRQ || b.cpu != 0 || b.v != 165*us {
		t.Errorf("B: queued %v on CPU %d at v %d; want queued on CPU 0 at 165 µs", b.onRQ, b.cpu, b.v)
	}
	if a := s.ents[1]; a.vlag != -5*us {
		t.Errorf("A's lag at its move: %d ns, want -5000 (taken with B placed)", a.vlag)
	}
}

// The shadow follows the engine's v6.12 rules exactly: on a replay of a
// committed 6.12 recording every pick it can check agrees with the
// replay's switch (FIDELITY.md round 61; the engine writes a
// sched_stat_runtime at each update_curr since session 33). A change to
// either side's rules that the other does not share shows up here.
// schbench (two groups of threads cycling through usleep and futex
// wakeups, hogs at ticks), hackbench (tens of tasks per CPU) and stress-ng
// (real-time tasks, forks, exits) on guest-M r3, and hackbench on guest-N
// r2 and guest-P r3, whose replays found the shadow's order wrong three
// times (FIDELITY.md rounds 113, 115 and 116); and messaging on the
// four-vCPU guest-Q (same-day r1), whose replay holds remote wakeups of
// host-stalled wakers and enqueues them milliseconds after their waking
// (pending.held; round 151).
func TestExactOnReplay(t *testing.T) {
	for _, c := range []struct {
		guest, workload string
		min             int   // picks checked, about the recording's count
		slice           int64 // the guest's base slice
	}{
		{"v6.12/guest-M-1s1c2t/r3", "schbench", 1500, 1400000}, {"v6.12/guest-M-1s1c2t/r3", "hackbench", 600, 1400000}, {"v6.12/guest-M-1s1c2t/r3", "stressng-mix", 4000, 1400000},
		{"v6.12/guest-N-2s1c1t-2numa/r2", "hackbench", 400, 1400000}, {"v6.12/guest-P-1s2c1t/r3", "hackbench", 200, 1400000},
		{"crosskernel/v6.12/guest-Q-1s2c2t/r1", "messaging", 2800, 2100000},
	} {
		path := filepath.Join("..", "..", "fixtures", "kernels", c.guest, c.workload+".perf.data.gz")
		rd, err := ingest.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		meta := rd.Meta()
		w, _, err := whatif.ExtractAndMeasure(rd, meta.Topology, meta.Source.OSRelease)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		pol, err := whatif.PolicyForKernel(meta.Source.OSRelease)
		if err != nil {
			t.Fatal(err)
		}
		// Debian's 6.12.57 predates 6.12.y's NI_RANDOM (6.12.65).
		if pol.Name() != "v6.12~33cf66d88306" {
			t.Fatalf("policy %s for %s, want v6.12~33cf66d88306", pol.Name(), meta.Source.OSRelease)
		}
		cfg := whatif.DefaultConfig(pol)
		cfg.Topology, cfg.Kernel = meta.Topology, meta.Source.OSRelease
		cfg.SetAutoWork(w) // --work auto, as the CLI
		s := newShadow(params{sliceNS: c.slice, tickNS: 4000000}, false)
		s.begin("replay", 0, false)
		if _, err := whatif.Replay(w, cfg, sinkFunc(func(e *timeline.Event) error { s.event(e); return nil })); err != nil {
			t.Fatal(err)
		}
		var agree, disagree int
		for k, p := range s.res.picks {
			agree += p[0].agree
			disagree += p[0].disagree
			if p[0].disagree > 0 {
				t.Errorf("%s %s, %s: %d of %d picks disagree with the replay", c.guest, c.workload, k, p[0].disagree, p[0].agree+p[0].disagree)
			}
		}
		if agree < c.min {
			t.Errorf("%s %s: %d picks checked, want at least %d", c.guest, c.workload, agree, c.min)
		}
		t.Logf("%s %s: %d picks agree, %d disagree", c.guest, c.workload, agree, disagree)
	}
}

// A replay's remote wakeup onto a busy CPU whose enqueue comes after its
// waking (the waker stalled by its host inside try_to_wake_up: whatif's
// wake_stall) is placed at the update of the target's running task that
// the waker writes at the enqueue, not at the waking. By hand (slice 1 ms,
// vruntimes in µs): A on CPU 0, W on CPU 1 from 0.
//
//	100  A's update (v 100); X forked onto CPU 0 at V 100 (deadline 600).
//	200  A's update (v 200); A preempted, X picked (V 150).
//	250  X's update (v 150); X blocks eligible (V 175): lag 25. A picked.
//	300  W wakes X onto CPU 0 (written on CPU 1); no update of A.
//	400  W's update on CPU 1: X's enqueue has not come (held).
//	600  A's update written on CPU 1, where W runs: the enqueue. A v 550;
//	     X placed with its lag inflated to 25 × 2 = 50: v 500.
//
// Placed at its waking, X would have been put at 200 − 50 = 150.
func TestHeldEnqueueOfAReplay(t *testing.T) {
	waking := wake(300*us, timeline.SchedWaking, 2, "x")
	waking.SetInt(timeline.CPU, 1)
	waking.SetInt(timeline.CommonPID, 3)
	aUpdateOn1 := runtime(600*us, 1, 350*us, false)
	aUpdateOn1.SetInt(timeline.CPU, 1)
	evs := append(aAndOnCPU1(3, "w"),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 2, "x"),
		runtime(200*us, 1, 100*us, false),
		sw(200*us, 1, "R", 2),
		runtime(250*us, 2, 50*us, false),
		sw(250*us, 2, "S", 1),
		waking,
		on1(runtime(400*us, 3, 400*us, false)),
		aUpdateOn1,
	)
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 2}, "preempt": {agree: 1}, "block": {agree: 1}})
	if x := s.ents[2]; !x.onRQ || x.cpu != 0 || x.v != 500*us || x.d != 1500*us {
		t.Errorf("X: queued %v on CPU %d at v %d, deadline %d; want queued on CPU 0 at 500 µs, deadline 1500 µs", x.onRQ, x.cpu, x.v, x.d)
	}
	if s.res.heldEnqueues[0] != 1 {
		t.Errorf("held enqueues %d, want 1", s.res.heldEnqueues[0])
	}
}

type sinkFunc func(*timeline.Event) error

func (f sinkFunc) Emit(e *timeline.Event) error { return f(e) }

// A task the trace next shows under a real-time priority leaves the fair
// queue (__sched_setscheduler's dequeue): found on stress-ng's cyclic
// stressor, which switches itself to SCHED_FIFO mid-run and which the
// shadow had kept queued for the rest of the recording, holding V back.
// By hand, one CPU, slice 1 ms (vruntimes in µs): A forked at 0 (v 0,
// deadline 500); B forked at 100 (A's update: v 100; B at V 100,
// deadline 600); C at 200 (A v 200; V 150: C v 150, deadline 650); at
// 300 A (v 300) blocks, shown with prio 0: it leaves with lag
// 183.3 − 300 = −116.7 and its deadline kept relative (200); B is picked
// (V 125: only B eligible). At 400 B (v 200) blocks: V = (200 + 150)/2 =
// 175, B not eligible, delayed (with A counted V would be 216.7 and B
// would leave); C is picked.
func TestTurnedRealTimeLeavesTheQueue(t *testing.T) {
	rtBlock := sw(300*us, 1, "S", 2)
	rtBlock.SetInt(timeline.PrevPrio, 0)
	evs := append(abcForked(),
		runtime(300*us, 1, 100*us, false),
		rtBlock,
		runtime(400*us, 2, 100*us, false),
		sw(400*us, 2, "S", 3),
	)
	s := handShadow(evs)
	checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "other": {agree: 1}, "block": {agree: 1}})
	a := s.ents[1]
	if a.onRQ || s.rq(0).has(a) || !a.rt {
		t.Errorf("A: onRQ %v, on the queue %v, rt %v; want off the fair queue, real-time", a.onRQ, s.rq(0).has(a), a.rt)
	}
	if a.vlag != -116667 || !a.relDL || a.d != 200*us {
		t.Errorf("A: lag %d ns, deadline %d (relative %v); want -116667, 200000 relative", a.vlag, a.d, a.relDL)
	}
	if b := s.ents[2]; !b.delayed || !b.onRQ {
		t.Errorf("B after its block: delayed %v, on_rq %v; want delayed (V without A)", b.delayed, b.onRQ)
	}
	if s.res.leftFair[0] != 1 {
		t.Errorf("tasks taken off on turning real-time: %d, want 1", s.res.leftFair[0])
	}
}

// With schedstats a remote wakeup's enqueue is its sched_stat_sleep, and
// a switch on the target CPU before it picks without the wakee (the pick
// holds that CPU's run-queue lock; the waker takes it later). By hand,
// CPU 0, slice 1 ms (vruntimes in µs): A forked at 0 (v 0, deadline
// 500), B at 100 (A v 100; B at V 100, deadline 600), C at 200 (A v 200;
// C at V 150, deadline 650); at 300 A (v 300) blocks with V 183.3, not
// eligible: delayed; B picked. At 400 B (v 200) blocks with V 216.7,
// eligible: it leaves with lag 16.7 (16,666 ns, V floored); C picked. CPU 1 wakes B at 450 for
// CPU 0; at 500 C (v 250) blocks: V 275, it leaves; A, delayed and now
// eligible (V 300), leaves at the pick, and CPU 0 goes idle, as the
// trace shows. B's enqueue (sched_stat_sleep, written on CPU 1) comes at
// 510 and CPU 0 switches to it at 520. Placed at the switch instead
// (-wake-at-switch), B (lag 16.7 × 3/2 = 25: v 250) would be the pick at
// 500.
func TestRemoteWakeupAfterThePick(t *testing.T) {
	evs := []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "a"),
		sw(0, 0, "R", 1),
		on1(wake(0, timeline.SchedWakeupNew, 4, "n")),
		on1(sw(0, 0, "R", 4)),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 2, "b"),
		runtime(200*us, 1, 100*us, false),
		wake(200*us, timeline.SchedWakeupNew, 3, "c"),
		runtime(300*us, 1, 100*us, false),
		sw(300*us, 1, "S", 2),
		runtime(400*us, 2, 100*us, false),
		sw(400*us, 2, "S", 3),
		wakingFrom1(450*us, 2, "b"),
		runtime(500*us, 3, 100*us, false),
		sw(500*us, 3, "S", 0),
		statSleep(510*us, 1, 2, 110*us),
		sw(520*us, 0, "R", 2),
	}
	for _, c := range []struct {
		wakeAtSwitch bool
		want         map[string]picks
	}{
		{false, map[string]picks{"idle": {agree: 3}, "block": {agree: 3}}},
		{true, map[string]picks{"idle": {agree: 3}, "block": {agree: 2, disagree: 1}}},
	} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us, wakeAtSwitch: c.wakeAtSwitch}, false)
		s.begin("hand", 0, true)
		for _, e := range evs {
			s.event(e)
		}
		checkPicks(t, s, c.want)
		if b := s.ents[2]; !c.wakeAtSwitch && (b.vlag != 16666 || !b.onRQ || s.rq(0).curr != b) {
			t.Errorf("B: lag at its block %d ns, on_rq %v, running %v; want 16666 (V floored), queued and running", b.vlag, b.onRQ, s.rq(0).curr == b)
		}
	}
}

// A remote waking's enqueue comes at its sched_stat_sleep, after a local
// waking onto the same CPU that was written later but enqueued first
// (crosskernel guest-M r1's 6.12 hackbench at 4.416700–4.416722: 372
// woken from CPU 1, 413 on CPU 0 itself 3 µs later and queued 14 µs
// before 372). Placement order is what V and each later lag depend on.
func TestRemoteWakeupPlacedAfterALaterLocalOne(t *testing.T) {
	evs := []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "x"),
		sw(0, 0, "R", 1),
		wakingFrom1(100*us, 2, "a"),
		wake(105*us, timeline.SchedWaking, 3, "b"),
		statSleep(108*us, 0, 3, 50*us),
		statSleep(120*us, 1, 2, 50*us),
	}
	for _, wakeAtSwitch := range []bool{false, true} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us, wakeAtSwitch: wakeAtSwitch}, false)
		s.begin("hand", 0, true)
		for _, e := range evs {
			s.event(e)
		}
		a, b := s.ents[2], s.ents[3]
		if !a.onRQ || !b.onRQ {
			t.Fatalf("wake-at-switch %v: A queued %v, B queued %v; want both", wakeAtSwitch, a.onRQ, b.onRQ)
		}
		if bFirst := b.seq < a.seq; bFirst == wakeAtSwitch {
			t.Errorf("wake-at-switch %v: B placed before A %v, want %v", wakeAtSwitch, bFirst, !wakeAtSwitch)
		}
	}
}

// A block the trace shows the kernel kept queued (no sleep statistics
// before the task runs again, and the wait sched_stat_wait then measures
// began at the block) is a delayed dequeue even where the shadow's own V
// finds the task eligible. By hand, one CPU, slice 1 ms (vruntimes in
// µs): A forked at 0 (v 0, deadline 500) and run; at 600 its update (v
// 600) renews its request (deadline 1600), B is forked at V 600
// (deadline 1100) and A blocks: V = 600, lag 0, eligible to the shadow.
// The trace shows no sched_stat_sleep for A before its switch-in at 800,
// whose sched_stat_wait dates its wait from 600: the kernel kept it (its
// V a hair below A's vruntime). B, the earlier deadline, is picked. At
// 750 B (v 750) wakes A: a delayed task's requeue, its lag V − v =
// 675 − 600 > 0 zeroed (DELAY_ZERO) and placed again at V = 750
// (deadline 1750). At 800 B (v 800) blocks, not eligible (V 775):
// delayed; A is picked.
func TestBlockTheKernelKeptQueued(t *testing.T) {
	wait := ev(800*us, timeline.SchedStatWait)
	wait.SetInt(timeline.PID, 1)
	wait.SetInt(timeline.Delay, 200*us)
	evs := []*timeline.Event{
		wake(0, timeline.SchedWakeupNew, 1, "a"),
		sw(0, 0, "R", 1),
		runtime(600*us, 1, 600*us, false),
		wake(600*us, timeline.SchedWakeupNew, 2, "b"),
		sw(600*us, 1, "S", 2),
		runtime(750*us, 2, 150*us, false),
		wake(750*us, timeline.SchedWaking, 1, "a"),
		runtime(800*us, 2, 50*us, false),
		wait,
		sw(800*us, 2, "S", 1),
	}
	w := watchBlocks(evs)
	if len(w.kept) != 1 || !w.kept[blockKey{1, 600 * us}] {
		t.Fatalf("kept blocks %v, want A's at 600 µs only", w.kept)
	}
	for _, own := range []bool{false, true} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us, ownDelay: own}, false)
		s.begin("hand", 0, true)
		s.kept = w.kept
		for i, e := range evs {
			s.event(e)
			if i == 4 {
				if a := s.ents[1]; a.delayed != !own || a.onRQ != !own {
					t.Errorf("own-delay %v: A after its block delayed %v, on_rq %v; want %v", own, a.delayed, a.onRQ, !own)
				}
			}
		}
		checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "block": {agree: 2}})
		if s.res.kept[0] != 1 || s.res.keptEligible[0] != 1 {
			t.Errorf("own-delay %v: blocks kept %d, eligible to the shadow %d; want 1, 1", own, s.res.kept[0], s.res.keptEligible[0])
		}
		if a := s.ents[1]; !own && (a.v != 750*us || a.d != 1750*us) {
			t.Errorf("A requeued at v %d, deadline %d; want 750000, 1750000 (DELAY_ZERO)", a.v, a.d)
		}
		// Requeued with a positive lag, placed again at V 750, picked
		// at 800 with B delayed beside it (v 800): V 775.
		want := map[string]delayStats{"a, " + delayRequeuedPlaced: {lag: []int64{25 * us}, woken: []int64{150 * us}, since: []int64{200 * us}}}
		if own {
			want = map[string]delayStats{}
		}
		checkAfterDelay(t, s, want)
	}
}

// A waking that comes while its task still runs (ttwu_runnable ending a
// wait the task left on its own) is taken for a wakeup racing the task's
// next block only if the trace does not wake the task again after that
// block before it runs (crosskernel guest-P r1's 6.12 messaging at
// 25.075076: 545 woken from CPU 1 while it ran, ran on 81 µs, blocked,
// and was woken again 2.35 ms later, its sleep statistics dated from the
// block; placed back at the block, it sat on CPU 0's queue meanwhile with
// a lag of +1.4 ms, holding V down). By hand: A runs alone on CPU 0 from
// 0; B, alone on CPU 1, blocks at 50 (lag 0). At 100 a waking of A is
// written on CPU 1 while A runs; A blocks alone at 200 (lag 0). B is
// woken onto CPU 0 at 550 (enqueued at its sched_stat_sleep, 555) and
// switched in at 560; A is woken at 700. Taken for a wakeup racing A's
// block, the waking at 100 would have put A back on CPU 0's queue once
// its sched_stat_sleep failed to come within the window (300 µs): at
// 550, at V with lag 0, before B, and the pick at 560 would name it.
func TestWakingWhileRunningBeforeALaterBlock(t *testing.T) {
	evs := append(bBlockedOn1(),
		wakingFrom1(100*us, 1, "a"),
		runtime(200*us, 1, 200*us, false),
		sw(200*us, 1, "S", 0),
		wakingFrom1(550*us, 2, "b"),
		statSleep(555*us, 1, 2, 505*us),
		sw(560*us, 0, "R", 2),
		wakingFrom1(700*us, 1, "a"),
		statSleep(705*us, 1, 1, 505*us),
	)
	w := watchBlocks(evs)
	if len(w.rewoken) != 2 || !w.rewoken[blockKey{1, 200 * us}] || !w.rewoken[blockKey{2, 50 * us}] {
		t.Fatalf("blocks woken before the task ran again %v, want A's at 200 µs and B's at 50 µs", w.rewoken)
	}
	for _, c := range []struct {
		rewoken               map[blockKey]bool
		held, undone, notHeld int
		idle                  picks
	}{
		{w.rewoken, 0, 0, 1, picks{agree: 3}},
		{nil, 1, 1, 0, picks{agree: 2, disagree: 1}},
	} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us}, false)
		s.begin("hand", 0, true)
		s.rewoken = c.rewoken
		for _, e := range evs {
			s.event(e)
		}
		checkPicks(t, s, map[string]picks{"idle": c.idle, "block": {agree: 2}})
		if s.res.held[0] != c.held || s.res.undone[0] != c.undone || s.res.heldNot[0] != c.notHeld {
			t.Errorf("rewoken %v: held %d (undone %d), not taken %d; want %d (%d), %d", c.rewoken != nil, s.res.held[0], s.res.undone[0], s.res.heldNot[0], c.held, c.undone, c.notHeld)
		}
		if a := s.ents[1]; !a.onRQ || a.spec {
			t.Errorf("rewoken %v: A at the end queued %v, as a held wakeup %v; want queued by its own waking", c.rewoken != nil, a.onRQ, a.spec)
		}
	}
}

// A block whose sleep the trace's statistics date from the block itself
// was a dequeue there: the kernel found the task eligible where the
// shadow's V may not, so it leaves with the least positive lag, 1 ns.
// By hand, one CPU, slice 1 ms (vruntimes in µs): A forked at 0 (v 0,
// deadline 500) and run; B forked at 100 after A's update (A v 100; B at
// V 100, deadline 600); at 200 A's update (v 200) and A blocks: V = 150,
// lag −50, not eligible to the shadow. Its sched_stat_sleep at 300 dates
// the sleep from 200: dequeued, lag 1 ns; B runs alone. At 300 B's
// update (v 200 = V) and B wakes A on its own CPU: A's lag 1 ns × (1024
// + 1024)/1024 places it at 200 − 0.002, V falls 1 ns below B's
// vruntime, and B, protected but not eligible, loses the wakeup check to
// A: a preemption, which the trace shows at 310. Kept delayed instead
// (-own-delay), A's lag at the waking is 0: B is eligible and keeps the
// CPU, and the switch to A disagrees.
func TestBlockTheKernelDequeued(t *testing.T) {
	evs := append(abRun(),
		sw(200*us, 1, "S", 2),
		runtime(300*us, 2, 100*us, false),
		wake(300*us, timeline.SchedWaking, 1, "a"),
		statSleep(300*us, 0, 1, 100*us),
		sw(310*us, 2, "R", 1),
	)
	w := watchBlocks(evs)
	if len(w.dequeued) != 1 || !w.dequeued[blockKey{1, 200 * us}] || len(w.kept) != 0 {
		t.Fatalf("blocks dequeued %v (kept %v), want A's at 200 µs (none)", w.dequeued, w.kept)
	}
	for _, own := range []bool{false, true} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us, ownDelay: own}, false)
		s.begin("hand", 0, true)
		s.kept, s.dequeued = w.kept, w.dequeued
		for i, e := range evs {
			s.event(e)
			if a := s.ents[1]; i == 5 && (a.delayed != own || a.onRQ != own || !own && a.vlag != 1) {
				t.Errorf("own-delay %v: A after its block delayed %v, on_rq %v, lag %d; want %v, %v, 1 ns if dequeued", own, a.delayed, a.onRQ, a.vlag, own, own)
			}
		}
		preempt := picks{agree: 1}
		if own {
			preempt = picks{disagree: 1}
		}
		checkPicks(t, s, map[string]picks{"idle": {agree: 1}, "block": {agree: 1}, "preempt": preempt})
		if s.res.dequeued[0] != 1 {
			t.Errorf("own-delay %v: blocks dequeued against the shadow's test %d, want 1", own, s.res.dequeued[0])
		}
		st := s.res.wakes["b running, a woken (from the running task or an interrupt)"]
		if own != (st == nil) || !own && (st[0].n != 1 || st[0].predicted != 1 || st[0].preempted != 1) {
			t.Errorf("own-delay %v: B's wakeup check of A %v; want one, predicted and seen, if A was dequeued", own, st)
		}
	}
}

// A balance pass's moves are attached in the reverse of their detach
// order (attach_tasks takes the task detached last first) though a trace
// writes each sched_migrate_task at its own instant, and a move whose
// placement window runs out takes the rest of its pass along
// (crosskernel guest-N r3's 6.12 messaging at 25.4968: 29 tasks pulled
// from CPU 1 in one pass, which the kernel then ran from the last
// detached on). By hand (vruntimes in µs): on CPU 1, X forked at 0 and
// run; B forked at 100 (V 100, deadline 600), C at 200 after X's update
// (X v 200; C at V 150, deadline 650). On CPU 0, A forked at 0 and run,
// updated at 290 (v 290). CPU 0 detaches C at 300 (V 150 on CPU 1: lag
// 0) and B at 310 (V 150 without C: lag 50). At 605 C's window (300 µs)
// has run out: B is attached first, its lag 50 × (1024 + 1024)/1024 =
// 100 below V (v 190, deadline 190 + 500), V 240; then C at V (v 240,
// deadline 740).
func TestBalancePassAttachedLastDetachedFirst(t *testing.T) {
	evs := append(aAndOnCPU1(3, "x"),
		on1(runtime(100*us, 3, 100*us, false)),
		on1(wake(100*us, timeline.SchedWakeupNew, 4, "b")),
		on1(runtime(200*us, 3, 100*us, false)),
		on1(wake(200*us, timeline.SchedWakeupNew, 5, "c")),
		runtime(290*us, 1, 290*us, false),
		migrate(300*us, 5, "c", 1, 0),
		migrate(310*us, 4, "b", 1, 0),
		runtime(605*us, 1, 315*us, false),
	)
	s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us}, false)
	s.begin("hand", 0, true)
	for _, e := range evs {
		s.event(e)
	}
	b, c := s.ents[4], s.ents[5]
	if !b.onRQ || !c.onRQ || b.cpu != 0 || c.cpu != 0 {
		t.Fatalf("B on CPU %d queued %v, C on CPU %d queued %v; want both queued on CPU 0", b.cpu, b.onRQ, c.cpu, c.onRQ)
	}
	if b.seq > c.seq || b.v != 190*us || b.d != 690*us || c.v != 240*us || c.d != 740*us {
		t.Errorf("B placed first %v at v %d, deadline %d; C at v %d, deadline %d; want B first at 190000, 690000, C at 240000, 740000", b.seq < c.seq, b.v, b.d, c.v, c.d)
	}
	if s.res.passes[0] != 1 || s.res.passMoves[0] != 2 {
		t.Errorf("passes of two or more moves %d (%d tasks), want 1 (2)", s.res.passes[0], s.res.passMoves[0])
	}
}

// The base slice follows the timeline's CPU count as the kernel scales
// it (the guests' debugfs base_slice_ns: 1400000 on two vCPUs, 2100000
// on guest-Q's four).
func TestBaseSliceFromCPUs(t *testing.T) {
	for _, c := range []struct {
		online, cpus int
		want         int64
	}{
		{0, 0, 1400000}, {1, 1, 700000}, {2, 2, 1400000}, {4, 4, 2100000}, {0, 4, 2100000}, {3, 8, 1400000}, {8, 8, 2800000}, {64, 64, 2800000},
	} {
		m := &timeline.Meta{}
		m.Source.NrCPUsOnline, m.Source.NrCPUs = c.online, c.cpus
		if got := baseSliceNS(m); got != c.want {
			t.Errorf("%d of %d CPUs online: base slice %d ns, want %d", c.online, c.cpus, got, c.want)
		}
	}
}

// A wakeup whose enqueue the trace writes late (its waker stalled inside
// try_to_wake_up: crosskernel guest-Q r1's 6.12 hackbench, 653 woken from
// CPU 0 at 4.750235, its sched_stat_sleep 3.3 ms later, the host having
// descheduled that vCPU) is placed at that enqueue, not when its window
// runs out or when the target's running task is updated twice. By hand,
// with schedstats (vruntimes in µs): A runs alone on CPU 0 from 0; B,
// alone on CPU 1, blocks at 50. B's waking for CPU 0 is written on CPU 1
// at 100; A is updated at 150 and 200 and blocks at 500, and CPU 0 goes
// idle; B's sched_stat_sleep comes at 600 and B runs on CPU 0 at 610.
// Placed early, B would have been picked at 500.
func TestLateEnqueueWaitsForItsStatistics(t *testing.T) {
	evs := append(bBlockedOn1(),
		wakingFrom1(100*us, 2, "b"),
		runtime(150*us, 1, 150*us, false),
		runtime(200*us, 1, 50*us, false),
		runtime(500*us, 1, 300*us, false),
		sw(500*us, 1, "S", 0),
		statSleep(600*us, 1, 2, 550*us),
		sw(610*us, 0, "R", 2),
	)
	w := watchBlocks(evs)
	if len(w.enqueueStat) != 1 || !w.enqueueStat[blockKey{2, 100 * us}] {
		t.Fatalf("wakings with their enqueue's statistics %v, want B's at 100 µs", w.enqueueStat)
	}
	for _, c := range []struct {
		stat  map[blockKey]bool
		block picks
		late  int
	}{
		{w.enqueueStat, picks{agree: 2}, 1},
		{nil, picks{agree: 1, disagree: 1}, 0},
	} {
		s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us}, false)
		s.begin("hand", 0, true)
		s.enqueueStat = c.stat
		for _, e := range evs {
			s.event(e)
		}
		checkPicks(t, s, map[string]picks{"idle": {agree: 3}, "block": c.block})
		if s.res.late[0] != c.late {
			t.Errorf("late enqueues %d, want %d", s.res.late[0], c.late)
		}
	}
}

// A newly idle balance inside the schedule() of a task that blocks: the
// kernel dequeues the task (its lag saved) before the balance, whose
// attach then charges the balance's time to it (still cfs_rq->curr), and
// the pulls come before the switch is written. The sleep statistics date
// the sleep from the dequeue. By hand (two CPUs, slice 1 ms, vruntimes
// in µs):
//
//	0     CPU 0: A forked (v 0) and run. CPU 1: B forked (v 0) and run.
//	100   CPU 0: A's update (v 100); C forked at V 100.
//	300   CPU 1: B's update (v 300) and its block's dequeue, alone: lag 0.
//	350   CPU 0: A's update (v 350, V 225); D forked at V 225.
//	400   CPU 1 pulls C (lag 125 on CPU 0); the attach charges B 100.
//	450   CPU 1 pulls D; the attach charges B 50.
//	460   CPU 1 switches from B (S) to C.
//	1000  B's sleep statistics date its sleep from 300.
//
// Dequeued at the switch instead, B would have had C on its queue, placed
// at B's 400 with its lag doubled (v 150), and B at 450: lag −150, not
// eligible, delayed.
func TestBlockBeforeANewlyIdlePull(t *testing.T) {
	evs := append(aAndOnCPU1(2, "b"),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 3, "c"),
		on1(runtime(300*us, 2, 300*us, false)),
		runtime(350*us, 1, 250*us, false),
		wake(350*us, timeline.SchedWakeupNew, 4, "d"),
		migrate(400*us, 3, "c", 0, 1),
		on1(runtime(400*us, 2, 100*us, false)),
		migrate(450*us, 4, "d", 0, 1),
		on1(runtime(450*us, 2, 50*us, false)),
		on1(sw(460*us, 2, "S", 3)),
		statSleep(1000*us, 1, 2, 700*us),
	)
	w := watchBlocks(evs)
	if got := w.early[2]; len(got) != 1 || got[0] != [2]int64{300 * us, 460 * us} {
		t.Fatalf("early blocks of B %v, want [[300 µs, 460 µs]]", got)
	}
	s := statShadow(evs)
	checkDequeuedAlone(t, s, 2)
	if s.res.early[0] != 1 {
		t.Errorf("blocks dequeued before a pull: %d, want 1", s.res.early[0])
	}
	if c := s.ents[3]; s.rqs[1].curr != c || c.v != 300*us {
		t.Errorf("CPU 1 runs %d, C at v %d; want C (3), placed at 300 µs (lag not kept on an empty queue)", pidOf(s.rqs[1].curr), c.v)
	}
	// With E queued on CPU 1 too, no newly idle balance could have run:
	// the sleep's date is taken for a skipped clock update's, B dequeued
	// at the switch.
	s = statShadow(append([]*timeline.Event{on1(wake(0, timeline.SchedWakeupNew, 5, "e"))}, evs...))
	if s.res.early[0] != 0 {
		t.Errorf("with E queued: blocks dequeued before a pull %d, want 0", s.res.early[0])
	}
}

// A remote wakeup placed onto the CPU of a task whose schedule() already
// dequeued it, alone there, before the switch: the wakee joins an empty
// queue, its lag not kept. By hand (two CPUs, slice 1 ms, vruntimes in
// µs):
//
//	0     CPU 0: A forked (v 0) and run. CPU 1: B forked (v 0) and run.
//	100   CPU 0: A's update (v 100); W forked at V 100.
//	300   CPU 0: A's update (v 300, V 200), A preempted for W.
//	350   CPU 0: W's update (v 150, V 225); W blocks, lag 75.
//	500   CPU 1: B's update (v 500) and its block's dequeue, alone.
//	550   CPU 0: A wakes W for CPU 1; its enqueue at 560: v 500.
//	600   CPU 1 switches from B (S) to W.
//	2000  B's sleep statistics date its sleep from 500.
//
// With B still queued W would have been placed with its lag doubled (v
// 350), and B, at the switch, with a lag of −75: delayed.
func TestRemoteWakeupAfterTheBlocksDequeue(t *testing.T) {
	waking := wake(550*us, timeline.SchedWaking, 3, "w")
	waking.SetInt(timeline.TargetCPU, 1)
	evs := append(aAndOnCPU1(2, "b"),
		runtime(100*us, 1, 100*us, false),
		wake(100*us, timeline.SchedWakeupNew, 3, "w"),
		runtime(300*us, 1, 200*us, false),
		sw(300*us, 1, "R", 3),
		runtime(350*us, 3, 50*us, false),
		sw(350*us, 3, "S", 1),
		on1(runtime(500*us, 2, 500*us, false)),
		waking,
		statSleep(560*us, 0, 3, 210*us),
		on1(sw(600*us, 2, "S", 3)),
		statSleep(2000*us, 1, 2, 1500*us),
	)
	s := statShadow(evs)
	checkDequeuedAlone(t, s, 2)
	if wt := s.ents[3]; s.rqs[1].curr != wt || wt.v != 500*us || wt.d != 1500*us {
		t.Errorf("CPU 1 runs %d, W at v %d, deadline %d; want W (3) at 500 µs, 1500 µs", pidOf(s.rqs[1].curr), wt.v, wt.d)
	}
	checkPicks(t, s, map[string]picks{"idle": {agree: 2}, "preempt": {agree: 1}, "block": {agree: 2}})
}

// statShadow runs a hand-worked schedule with schedstats (slice 1 ms, HZ
// 250) through a fresh shadow, with blockEvidence's early blocks.
func statShadow(evs []*timeline.Event) *shadow {
	s := newShadow(params{sliceNS: 1000 * us, tickNS: 4000 * us}, false)
	s.begin("hand", 0, true)
	s.early = watchBlocks(evs).early
	for _, e := range evs {
		s.event(e)
	}
	return s
}

// checkDequeuedAlone: the blocked task pid left its queue with lag 0, as
// a task alone there does.
func checkDequeuedAlone(t *testing.T, s *shadow, pid int32) {
	t.Helper()
	if b := s.ents[pid]; b.onRQ || b.delayed || b.vlag != 0 {
		t.Errorf("%d after its block: queued %v, delayed %v, lag %d; want dequeued with lag 0", pid, b.onRQ, b.delayed, b.vlag)
	}
}
