package whatif

import (
	"fmt"
	"os"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// forkWaitWorkload: a parent P on one CPU forks C0 at the start of its
// first activation (0.1 ms) and waits; C0 runs 0.5 ms and its exit wakes
// P (a waiting parent). P's second activation forks C1 at once and C2
// 0.1 ms later, and exits after 0.2 ms. C1 runs 1 ms and exits, C2 0.1
// ms. In the trace C1 ran elsewhere and exited (at t0+1.7 ms) before P's
// fork of C2 (t0+1.8 ms), with no wakeup of P (P was not yet in
// wait()).
func forkWaitWorkload(t *testing.T) *Workload {
	return forkFamily{spec: "sockets=1,cores=1,threads=1", p: [2]int64{ms / 10, ms / 5}, c: [3]int64{ms / 2, ms, ms / 10},
		exits: [3]int64{600000, 1700000, 1900000}, c2Off: ms / 10, c2Fork: 1800000}.build(t, nil)
}

// forkFamily is the shape of the fork-wait scenarios: a parent P on CPU 0
// with two activations (demands p) forks C0 at the start of the first and
// waits; C0's exit wakes P, whose second activation forks C1 at once and
// C2 at c2Off of its demand, then exits. The children (demands c) exit in
// the trace at t0 + exits (C0's notification and P's fork of C1 at its
// exit, P's exit with C2's); the trace forks C2 at t0 + c2Fork.
type forkFamily struct {
	spec          string
	p             [2]int64
	c             [3]int64
	exits         [3]int64
	c2Off, c2Fork int64
}

// build makes the workload; extra adds tasks before it is checked.
func (f forkFamily) build(t *testing.T, extra func(*builder)) *Workload {
	b := newBuilder(t, f.spec)
	p := b.task("p", 120, 0, true, CauseStart, f.p[0], f.p[1])
	var cs [3]int32
	for i, d := range f.c {
		cs[i] = b.task(fmt.Sprintf("c%d", i), 120, 0, false, CauseFork, d)
		b.w.Tasks[cs[i]].Activations[0].End = EndExit
		b.w.Tasks[cs[i]].ExitNS = t0 + f.exits[i]
	}
	if extra != nil {
		extra(b)
	}
	b.w.Tasks[p].Activations[1].End = EndExit
	b.w.Tasks[p].ExitNS = t0 + f.exits[2]
	b.w.Edges = append(b.w.Edges,
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: 0, Wakee: cs[0], WakeeAct: 0, TimeNS: t0},
		Edge{Kind: EdgeWake, Causal: true, Waker: cs[0], WakerAct: 0, OffsetNS: f.c[0], Wakee: p, WakeeAct: 1, TimeNS: t0 + f.exits[0]},
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 1, OffsetNS: 0, Wakee: cs[1], WakeeAct: 0, TimeNS: t0 + f.exits[0]},
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 1, OffsetNS: f.c2Off, Wakee: cs[2], WakeeAct: 0, TimeNS: t0 + f.c2Fork},
	)
	return b.done(t)
}

// The plan by hand: P waits for its children (C0's exit woke it), its
// fork of C2 needs C0's and C1's exits (C0's notification at t0+0.6 ms,
// C1's exit at t0+1.7 ms, both before t0+1.8 ms), its fork of C1 C0's
// (t0+0.6 ms is not before t0+0.6 ms: none), its fork of C0 none; C0's
// wakeup of P is its exit notification.
func TestForkWaitPlan(t *testing.T) {
	w := forkWaitWorkload(t)
	p := newForkWaitPlan(w, true)
	want := []int32{0, 0, 2, 0} // Index orders the edges by waker: P's three forks, then C0's wakeup
	for i, n := range want {
		if p.need[i] != n {
			t.Errorf("edge %d needs %d exits, want %d", i, p.need[i], n)
		}
	}
	if !p.notify[3] || p.notify[0] || p.notify[1] || p.notify[2] {
		t.Errorf("notify %v, want only edge 3", p.notify)
	}
	if p.exits[0] != 3 {
		t.Errorf("parent counts %d exits, want 3", p.exits[0])
	}
	if off := newForkWaitPlan(w, false); off.need[2] != 0 || off.exits[0] != 0 {
		t.Error("plan made when off")
	}
}

// The replay by hand, one CPU, no idle-exit delay: P runs 0.1 ms (forking
// C0, a fork never preempts) and sleeps; C0 runs to t0+0.6 ms, wakes P
// and exits; P forks C1 at t0+0.6 ms and reaches C2's fork at t0+0.7 ms
// with one exit counted of the two needed: it sleeps in the wait the
// trace hid, C1 runs to its exit at t0+1.7 ms and wakes it, and P forks
// C2 at t0+1.7 ms and exits at t0+1.8 ms; C2 exits at t0+1.9 ms. With
// fork_wait off P forks C2 at t0+0.7 ms.
func TestForkWaitReplay(t *testing.T) {
	for _, c := range []struct {
		off    bool
		forkC2 int64
		waits  int64
	}{{false, t0 + 1700000, 1}, {true, t0 + 700000, 0}} {
		cfg := testConfig()
		cfg.NoForkWait = c.off
		w := forkWaitWorkload(t)
		ex, forks := exitTimes{}, forkTimes{}
		res, err := Replay(w, cfg, Tee{newChecker(t), ex, forks})
		if err != nil {
			t.Fatal(err)
		}
		fork, ok := forks[103]
		if !ok {
			fork = -1
		}
		if fork != c.forkC2 {
			t.Errorf("fork_wait off %v: C2 forked at %d ns after t0, want %d", c.off, fork-t0, c.forkC2-t0)
		}
		if res.Stats.ForkWaits != c.waits {
			t.Errorf("fork_wait off %v: %d fork waits, want %d", c.off, res.Stats.ForkWaits, c.waits)
		}
		if !c.off && (ex[100] != t0+1800000 || ex[102] != t0+1700000 || ex[103] != t0+1900000) {
			t.Errorf("exits P %d, C1 %d, C2 %d ns after t0; want 1.8, 1.7, 1.9 ms", ex[100]-t0, ex[102]-t0, ex[103]-t0)
		}
	}
}

// forkTimes collects each task's sched_wakeup_new time.
type forkTimes map[int32]int64

func (x forkTimes) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedWakeupNew {
		x[e.Int32(timeline.PID)] = e.Time
	}
	return nil
}

// On the vfork recording: perf script shows 3,217 of the 4,002 vfork
// children waking their parent twice (the vfork done, then the exit's
// notification of a parent asleep in wait()), 784 once (the vfork done:
// the parent had not yet waited when the child exited) and 1 never.
// Extraction takes 3,194 of the second wakings as what woke the parent
// (23 found it already runnable); those, and stressor 1027's exit
// waking stress-ng's main process, are the plan's 3,195 notifications.
// The stressors' 4,000 vforks (perf script: 4,002 sched_wakeup_new, two
// of them stress-ng forking the stressors) all need the exits before
// them but each stressor's first.
func TestForkWaitPlanOnTheVforkRecording(t *testing.T) {
	path := "../fixtures/local-6.18/workloads/stressng-vfork.perf.data"
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	w, _ := extractFixture(t, path)
	p := newForkWaitPlan(w, true)
	notify, forks, needing := 0, 0, 0
	for i, e := range w.Edges {
		if p.notify[i] {
			notify++
		}
		if e.Kind == EdgeFork && w.Tasks[e.Waker].Comm == "stress-ng-vfork" {
			forks++
			if p.need[i] > 0 {
				needing++
			}
		}
	}
	if notify != 3195 {
		t.Errorf("%d exit notifications, want 3,195", notify)
	}
	if forks != 4000 || needing != 3998 {
		t.Errorf("%d of %d vforks need child exits, want 3,998 of 4,000", needing, forks)
	}
}

// The exit's no-preemption stretch by hand, one CPU: P runs 0.1 ms,
// forks C0 (which then runs: P sleeps) and sleeps; C0 wakes P 0.4 ms
// into its 0.5 ms (its exit notification: the rest is do_exit's) and
// exits. P, woken at t0+0.5 ms with a sleeper's vruntime, would preempt
// C0 there; from exit_notify to do_task_dead the kernel has no
// preemption point, so C0 runs on to its exit at t0+0.6 ms and leaves in
// the trace's state (Z), and P is switched in then. With exit_preempt on
// (the replay until session 44) P is switched in at t0+0.5 ms and C0,
// preempted, leaves R.
func TestExitNotifyNoPreempt(t *testing.T) {
	for _, c := range []struct {
		exitPreempt bool
		pIn         int64
		c0Out       string
	}{{false, t0 + 600000, "Z"}, {true, t0 + 500000, "R"}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		p := b.task("p", 120, 0, true, CauseStart, ms/10, ms/5)
		c0 := b.task("c0", 120, 0, false, CauseFork, ms/2)
		b.w.Tasks[c0].Activations[0].End, b.w.Tasks[c0].Activations[0].EndState = EndExit, "Z"
		b.w.Tasks[p].Activations[1].End = EndExit
		b.w.Tasks[c0].ExitNS, b.w.Tasks[p].ExitNS = t0+600000, t0+800000
		b.w.Edges = append(b.w.Edges,
			Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: 0, Wakee: c0, WakeeAct: 0, TimeNS: t0},
			Edge{Kind: EdgeWake, Causal: true, Waker: c0, WakerAct: 0, OffsetNS: 4 * ms / 10, Wakee: p, WakeeAct: 1, TimeNS: t0 + 500000},
		)
		w := b.done(t)
		cfg := testConfig()
		cfg.ExitPreempt = c.exitPreempt
		sw := switchTimes{}
		if _, err := Replay(w, cfg, Tee{newChecker(t), &sw}); err != nil {
			t.Fatal(err)
		}
		var pIn int64 = -1
		for _, e := range sw {
			if e.next == w.Tasks[p].TID && e.at > t0+ms/10 && pIn < 0 {
				pIn = e.at
			}
		}
		c0Out := sw.firstOut(w.Tasks[c0].TID)
		if pIn != c.pIn || c0Out != c.c0Out {
			t.Errorf("exit_preempt %v: P back at %d ns after t0, C0 first left %q; want %d, %q", c.exitPreempt, pIn-t0, c0Out, c.pIn-t0, c.c0Out)
		}
	}
}

// switchTimes records the sched_switch rows with their times.
type switchTimes []struct {
	at         int64
	prev, next int32
	state      string
}

// firstOut is the state tid was first switched out in ("" never).
func (l switchTimes) firstOut(tid int32) string {
	for _, e := range l {
		if e.prev == tid {
			return e.state
		}
	}
	return ""
}

func (l *switchTimes) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedSwitch {
		*l = append(*l, struct {
			at         int64
			prev, next int32
			state      string
		}{e.Time, e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID), e.Str(timeline.PrevState)})
	}
	return nil
}

// A child's exit wakes the parent waiting for it before the child's last
// switch (exit_notify precedes do_task_dead), the child still on its
// CPU. By hand, two CPUs, no idle-exit delay; kworker/1:1 (pinned) holds
// CPU 1 from t0 to 0.4 ms. P on CPU 0 forks C0 at t0 (both CPUs hold one
// task: the child stays local) and sleeps at 0.05 ms; C0 runs 0.05-0.15
// ms and its exit notification, its last work, wakes P with no
// preemption left to take (C0 leaves in X, not R). P forks C1 at once
// (queued on CPU 0, CPU 1 still busy) and reaches C2's fork at 0.2 ms
// with C1 still to exit (the trace has C1 exit at 0.7 ms, before the fork
// at 0.8 ms, waking nobody): P sleeps in the wait the trace hid, and C1
// runs 0.2-0.7 ms on CPU 0. At C1's exit CPU 1 is idle. Woken before
// C1's switch, P finds CPU 0 busy and select_idle_sibling takes idle
// CPU 1: P runs 0.7-0.75 ms there. Woken after it (exit_wake=late, the
// replay before), P finds its own CPU 0 idle and runs there.
func TestExitWakesParentBeforeSwitch(t *testing.T) {
	for _, c := range []struct {
		late  bool
		pCPU  int64
		c0Out string
	}{{false, 1, "X"}, {true, 0, "X"}} {
		w := forkFamily{spec: "sockets=1,cores=2,threads=1", p: [2]int64{ms / 20, ms / 10}, c: [3]int64{ms / 10, ms / 2, ms / 10},
			exits: [3]int64{150000, 700000, 900000}, c2Off: ms / 20, c2Fork: 800000}.build(t, func(b *builder) {
			b.task("kworker/1:1", 120, 1, true, CauseStart, 4*ms/10)
		})
		p, c0 := int32(0), int32(1)
		cfg := testConfig()
		cfg.ExitWakeLate = c.late
		ch := newChecker(t)
		sw := switchTimes{}
		res, err := Replay(w, cfg, Tee{ch, &sw})
		if err != nil {
			t.Fatal(err)
		}
		pid := int64(w.Tasks[p].TID)
		run := ch.firstRunAfter(pid, t0+ms/2)
		if run == nil || run.start != t0+7*ms/10 || run.end != t0+3*ms/4 || run.cpu != c.pCPU {
			t.Errorf("exit_wake late %v: P's run after C1's exit %+v, want 0.7-0.75 ms on CPU %d", c.late, run, c.pCPU)
		}
		c0Out := sw.firstOut(w.Tasks[c0].TID)
		if c0Out != c.c0Out || res.Stats.ForkWaits != 1 {
			t.Errorf("exit_wake late %v: C0 first left in %q, %d fork waits; want %q, 1", c.late, c0Out, res.Stats.ForkWaits, c.c0Out)
		}
	}
}

// A wakeup for the activation after the one a parent sleeps in, before a
// fork that waits for its children's exits, is pending, not a wakeup: the
// parent has not finished that activation. By hand, P and its children
// pinned to CPU 0, W to CPU 1: P runs 0.1 ms (forking C0) and sleeps; C0
// runs to t0+0.6 ms, wakes P and exits; P forks C1 at t0+0.6 ms and
// reaches C2's fork at t0+0.7 ms with one of the two exits it needs: it
// sleeps. W, running from t0 on CPU 1, wakes P's third activation at
// t0+1.0 ms and exits; the wakeup finds P asleep inside its second:
// pending. C1 exits at t0+1.7 ms; P forks C2 then, ends its second
// activation at t0+1.8 ms, goes on into its third without sleeping and
// exits at t0+1.9 ms; C2 runs to its exit at t0+2.0 ms. The replay once
// started P's third activation at W's wakeup, leaving the fork of C2 and
// the rest of the second unrun: a stress-ng --clone recording on this
// machine failed the invariant check so (a wakeup of the stressor while
// it waited to fork).
func TestWakeDuringForkWaitIsPending(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	p := b.task("p", 120, 0, true, CauseStart, ms/10, ms/5, ms/10)
	var cs [3]int32
	for i, d := range [3]int64{ms / 2, ms, ms / 10} {
		cs[i] = b.task(fmt.Sprintf("c%d", i), 120, 0, false, CauseFork, d)
		b.w.Tasks[cs[i]].Activations[0].End = EndExit
		b.w.Tasks[cs[i]].ExitNS = t0 + []int64{600000, 1700000, 2000000}[i]
		b.w.Tasks[cs[i]].Pinned = 0
	}
	wt := b.task("w", 120, 1, true, CauseStart, ms)
	b.w.Tasks[wt].Pinned = 1
	b.w.Tasks[wt].Activations[0].End, b.w.Tasks[wt].ExitNS = EndExit, t0+ms
	b.w.Tasks[p].Pinned = 0
	b.w.Tasks[p].Activations[2].End, b.w.Tasks[p].ExitNS = EndExit, t0+1900000
	b.w.Edges = append(b.w.Edges,
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: 0, Wakee: cs[0], WakeeAct: 0, TimeNS: t0},
		Edge{Kind: EdgeWake, Causal: true, Waker: cs[0], WakerAct: 0, OffsetNS: ms / 2, Wakee: p, WakeeAct: 1, TimeNS: t0 + 600000},
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 1, OffsetNS: 0, Wakee: cs[1], WakeeAct: 0, TimeNS: t0 + 600000},
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 1, OffsetNS: ms / 10, Wakee: cs[2], WakeeAct: 0, TimeNS: t0 + 1800000},
		Edge{Kind: EdgeWake, Causal: true, Waker: wt, WakerAct: 0, OffsetNS: ms, Wakee: p, WakeeAct: 2, TimeNS: t0 + 1850000},
	)
	w := b.done(t)
	ex, forks := exitTimes{}, forkTimes{}
	res, err := Replay(w, testConfig(), Tee{newChecker(t), ex, forks})
	if err != nil {
		t.Fatal(err)
	}
	tid := func(i int32) int32 { return w.Tasks[i].TID }
	if got := forks[tid(cs[2])]; got != t0+1700000 {
		t.Errorf("C2 forked at %d ns after t0, want 1.7 ms", got-t0)
	}
	if ex[tid(p)] != t0+1900000 || ex[tid(cs[1])] != t0+1700000 || ex[tid(cs[2])] != t0+2000000 || ex[tid(wt)] != t0+ms {
		t.Errorf("exits P %d, C1 %d, C2 %d, W %d ns after t0; want 1.9, 1.7, 2.0, 1.0 ms", ex[tid(p)]-t0, ex[tid(cs[1])]-t0, ex[tid(cs[2])]-t0, ex[tid(wt)]-t0)
	}
	if res.Stats.ForkWaits != 1 || res.Stats.EdgesPending != 1 {
		t.Errorf("%d fork waits, %d pending wakeups; want 1, 1", res.Stats.ForkWaits, res.Stats.EdgesPending)
	}
}

// The stress-ng --clone recording (fixtures/local-6.18/regressions, its
// README) replays with the invariants holding under its kernel's policy
// and the CLI's work model, on the seeds whose replays started a
// stressor's next activation while it waited to fork on the engine before
// the fix (edge 450, the fork of 32293, fired 0 times on seed 2): each is
// a run in which a wakeup reached a stressor asleep before such a fork.
func TestCloneRecordingReplays(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/local-6.18/regressions/stressng-clone.perf.data")
	p, _ := LookupPolicy("latest")
	for _, seed := range []uint64{2, 6, 13, 14, 26} {
		cfg := DefaultConfig(p)
		cfg.Seed = seed
		if untilExit, _ := cfg.SetAutoWork(w); !untilExit {
			t.Fatal("work model fixed, want until-exit (stress-ng -t 2)")
		}
		res, err := Replay(w, cfg, checkerFor(t, cfg, w))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Stats.ForkWaits == 0 {
			t.Errorf("seed %d: no fork waits", seed)
		}
	}
}

// On the clone recording, perf script shows the stressors' children
// waking their parent 162 times while it slept: 156 from D (the vfork
// done: a clone made with CLONE_VFORK) and 6 from S (an exit's
// notification of a parent in wait()); counted over `perf script -F
// comm,pid,tid,cpu,time,event,trace` by following each task's last
// switch-out state to its first sched_waking. Extraction's causal wake
// edges from a child to its fork parent split the same way, and only the
// S ones can be a fork wait's exit notification.
func TestWokeFromDOnTheCloneRecording(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/local-6.18/regressions/stressng-clone.perf.data")
	parent, _ := w.forkParents()
	fromD, fromS := 0, 0
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.Kind != EdgeWake || !e.Causal || parent[e.Waker] != e.Wakee {
			continue
		}
		if wokeFromD(w, e) {
			fromD++
		} else {
			fromS++
		}
	}
	if fromD != 156 || fromS != 6 {
		t.Errorf("children's wakeups of their parent: %d from D, %d otherwise; want 156, 6 (perf script)", fromD, fromS)
	}
	p := newForkWaitPlan(w, true)
	for i, n := range p.notify {
		if n && wokeFromD(w, &w.Edges[i]) {
			t.Errorf("edge %d: a wakeup from D taken as an exit's notification", i)
		}
	}
}
