package whatif

import (
	"slices"
	"testing"
)

// reapWorkload: a parent P on a 4-CPU machine runs 1 ms, forking child A
// at 0.5 ms and child B at 1 ms, then waits for any child; A runs 2 ms and
// exits, B runs 8 ms and exits. The trace (edge times) saw them exit in the
// other order: B's exit woke P's activation 1 (1 ms), A's exit its
// activation 2 (1 ms, ending in P's exit). That is not fork order, so P is
// taken to wait for any child (reapPlan).
func reapWorkload(t *testing.T) (*Workload, int32) {
	b := newBuilder(t, "sockets=1,cores=4,threads=1")
	p := b.task("p", 120, 0, true, CauseStart, ms, ms, ms)
	ca := b.task("a", 120, 0, false, CauseFork, 2*ms)
	cb := b.task("b", 120, 0, false, CauseFork, 8*ms)
	b.w.Tasks[p].Activations[2].End = EndExit
	b.w.Tasks[ca].Activations[0].End = EndExit
	b.w.Tasks[cb].Activations[0].End = EndExit
	b.w.Edges = append(b.w.Edges,
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms / 2, Wakee: ca, WakeeAct: 0, TimeNS: t0 + ms/2},
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms, Wakee: cb, WakeeAct: 0, TimeNS: t0 + ms},
		Edge{Kind: EdgeWake, Causal: true, Waker: cb, WakerAct: 0, OffsetNS: 8 * ms, Wakee: p, WakeeAct: 1, TimeNS: t0 + 9*ms},
		Edge{Kind: EdgeWake, Causal: true, Waker: ca, WakerAct: 0, OffsetNS: 2 * ms, Wakee: p, WakeeAct: 2, TimeNS: t0 + 12*ms},
	)
	return b.done(t), p
}

// A parent waiting in wait() for any child is woken by whichever child
// exits first (exit_notify → do_notify_parent → __wake_up_parent; do_wait
// reaps any zombie child), not by the child the trace paired with the
// wakeup. reapWorkload by hand, every task on its own idle CPU (no idle
// exit delay): A exits at 2.5 ms, B at 9 ms. A's exit wakes P at 2.5 ms
// for its activation 1 (it needs one exit) to 3.5 ms; P then waits
// again, B's exit wakes it at 9 ms for activation 2 (two exits) and it
// exits at 10 ms. With the trace's pairing of every wakeup
// (PairedWakeups) P's activation 1 waited for B's exit at 9 ms and ran on
// into activation 2 (A's exit pending): P exited at 11 ms. By default any
// wakeup starts P's next activation, which gives the same 10 ms here.
func TestReapAnyChild(t *testing.T) {
	w, p := reapWorkload(t)
	pTID := w.Tasks[p].TID
	cfg := testConfig()
	cfg.ReapAnyChild = true
	res, ex, ch := replayExits(t, w, cfg)
	if ex[101] != t0+2500000 || ex[102] != t0+9*ms {
		t.Fatalf("children exit at %d and %d ns; want 2.5 ms and 9 ms", ex[101]-t0, ex[102]-t0)
	}
	if ex[pTID] != t0+10*ms {
		t.Errorf("parent exits at %d ns; want 10 ms", ex[pTID]-t0)
	}
	var starts []int64
	for _, r := range ch.runs {
		if r.tid == int64(pTID) && r.start > t0 {
			starts = append(starts, r.start-t0)
		}
	}
	if len(starts) != 2 || starts[0] != 2500000 || starts[1] != 9*ms {
		t.Errorf("parent switched in after its first activation at %v ns; want [2.5 ms, 9 ms]", starts)
	}
	st := res.Stats
	if st.ChildExits != 2 || st.ReapWakeups != 2 || st.ReapsWithoutSleep != 0 || st.EdgesPending != 0 {
		t.Errorf("child exits %d, reap wakeups %d, reaps without sleep %d, pending %d; want 2, 2, 0, 0", st.ChildExits, st.ReapWakeups, st.ReapsWithoutSleep, st.EdgesPending)
	}

	// Off, with the trace's pairing of every wakeup (PairedWakeups).
	cfg = testConfig()
	cfg.PairedWakeups = true
	res, ex, _ = replayExits(t, w, cfg)
	if ex[pTID] != t0+11*ms || res.Stats.ChildExits != 0 || res.Stats.EdgesPending != 1 {
		t.Errorf("trace's pairing: parent exits at %d ns, child exits counted %d, pending %d; want 11 ms, 0, 1", ex[pTID]-t0, res.Stats.ChildExits, res.Stats.EdgesPending)
	}

	// Off, by default: a wakeup starts the parent's next activation
	// whichever child sends it (wakeSlot), so A's exit wakes P at 2.5 ms
	// here too, and P exits at 10 ms; the reap plan's exit counts are off.
	res, ex, _ = replayExits(t, w, testConfig())
	if ex[pTID] != t0+10*ms || res.Stats.ChildExits != 0 || res.Stats.EdgesPending != 0 {
		t.Errorf("any waker: parent exits at %d ns, child exits counted %d, pending %d; want 10 ms, 0, 0", ex[pTID]-t0, res.Stats.ChildExits, res.Stats.EdgesPending)
	}
}

// A child that is already a zombie when the parent calls wait() is reaped
// without sleeping (do_wait finds it; no wakeup). reapWorkload with P's
// first activation 20 ms long (the forks still at 0.5 and 1 ms): both
// children exit during it (A at 2.5 ms, B at 9 ms), so P runs on into
// activations 1 and 2 without sleeping and exits at 22 ms.
func TestReapZombieAtHand(t *testing.T) {
	w, p := reapWorkload(t)
	w.Tasks[p].Activations[0].DemandNS = 20 * ms
	cfg := testConfig()
	cfg.ReapAnyChild = true
	res, ex, _ := replayExits(t, w, cfg)
	if got := ex[w.Tasks[p].TID] - t0; got != 22*ms {
		t.Errorf("parent exits at %d ns; want 22 ms", got)
	}
	st := res.Stats
	if st.ChildExits != 2 || st.ReapWakeups != 0 || st.ReapsWithoutSleep != 2 || st.ContinuedWithoutSleep != 2 {
		t.Errorf("child exits %d, reap wakeups %d, reaps without sleep %d, continued %d; want 2, 0, 2, 2", st.ChildExits, st.ReapWakeups, st.ReapsWithoutSleep, st.ContinuedWithoutSleep)
	}
}

// Which parents wait for any child: reapPlan on reapWorkload marks both
// exit wakeups and gives P's activations 1 and 2 the needs 1 and 2; with
// the trace's exits in fork order (A's first) it marks nothing (a
// waitpid or pthread_join loop over the children in turn).
func TestReapPlanInference(t *testing.T) {
	w, p := reapWorkload(t)
	base := []int32{0, 3, 4, 5}
	pl := newReapPlan(w, base, true)
	if pl.exits[p] != 2 || pl.need[1] != 1 || pl.need[2] != 2 {
		t.Errorf("exits %d, needs %v; want 2 and [0 1 2]", pl.exits[p], pl.need[:3])
	}
	for i := range w.Edges {
		if pl.edge[i] != (w.Edges[i].Kind == EdgeWake) {
			t.Errorf("edge %d (%s): child-exit %v", i, w.Edges[i].Kind, pl.edge[i])
		}
	}
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.Kind == EdgeWake {
			e.TimeNS = t0 + 24*ms - e.TimeNS // A's exit first
		}
	}
	pl = newReapPlan(w, base, true)
	if pl.exits[p] != 0 || pl.need[1] != 0 || pl.need[2] != 0 {
		t.Errorf("exits in fork order: exits %d, needs %v; want none", pl.exits[p], pl.need[:3])
	}

	// B's wakeup of P from D (P's activation 0 ended in D: a vfork wait)
	// is B's vfork done, not its exit's notification: A's is then the
	// only causal child-exit wakeup, which says nothing of the order P
	// waits in, so P is not taken to wait for any child (before
	// wokeFromD: both were, out of fork order, and P was).
	w, p = reapWorkload(t)
	w.Tasks[p].Activations[0].EndState = "D"
	pl = newReapPlan(w, base, true)
	if pl.exits[p] != 0 || pl.need[1] != 0 || pl.need[2] != 0 || slices.Contains(pl.edge, true) {
		t.Errorf("a wakeup from D: exits %d, needs %v, child-exit edges %v; want none", pl.exits[p], pl.need[:3], pl.edge)
	}
}

// A parent waiting for any child cannot get past its last wait() before
// its last child exits: do_wait sleeps while it has children and none is
// a zombie. reapWorkload plus a third child C (forked at 1 ms, 15 ms of
// demand) whose exit came during P's final activation in the trace (at
// 12.5 ms, P then running; P exited at 13 ms). By hand, every task on its
// own idle CPU: P runs its final activation from 9 to 10 ms, has seen two
// of the three exits it had seen in the trace by its exit, sleeps in
// wait(), is woken by C's exit at 16 ms and exits then. Without that rule
// it exited at 10 ms, before its child.
func TestReapWaitsForLastChild(t *testing.T) {
	w, p := reapWorkload(t)
	b := &builder{w: w}
	cc := b.task("c", 120, 0, false, CauseFork, 15*ms)
	w.Tasks[cc].Activations[0].End = EndExit
	w.Tasks[p].ExitNS = t0 + 13*ms
	w.Edges = append(w.Edges,
		Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms, Wakee: cc, WakeeAct: 0, TimeNS: t0 + ms},
		Edge{Kind: EdgeWake, Causal: false, Waker: cc, WakerAct: 0, OffsetNS: 15 * ms, Wakee: p, WakeeAct: 2, TimeNS: t0 + 12500000},
	)
	w = b.done(t)
	cfg := testConfig()
	cfg.ReapAnyChild = true
	res, ex, _ := replayExits(t, w, cfg)
	cTID, pTID := w.Tasks[cc].TID, w.Tasks[p].TID
	if ex[cTID] != t0+16*ms || ex[pTID] != t0+16*ms {
		t.Errorf("C exits at %d ns, P at %d ns; want both at 16 ms", ex[cTID]-t0, ex[pTID]-t0)
	}
	if st := res.Stats; st.ChildExits != 3 || st.ReapWaits != 1 || st.ReapWakeups != 3 {
		t.Errorf("child exits %d, reap waits %d, reap wakeups %d; want 3, 1, 3", st.ChildExits, st.ReapWaits, st.ReapWakeups)
	}
}
