package whatif

import "slices"

// Waits for a child's exit that the trace does not show.
//
// A parent that forks a child and waits for it before its next fork
// (stress-ng's fork and vfork stressors: fork, wait, fork) sleeps in
// wait() only when the child has not exited yet; when it has (it ran on
// another CPU), wait() reaps the zombie without sleeping and the child's
// exit wakes nobody, so the trace shows one activation of the parent
// running from the child's vfork done through its wait to its next fork.
// Replayed with that child on the parent's CPU, the parent, preempting
// it at the vfork done, ran on into its next fork while the child still
// had its exit to run (FIDELITY.md round 71: 1,902 of the vfork replay's
// switches from a parent blocking after a fork went to an older child).
//
// forkWaitPlan holds that dependency: a fork edge of a parent that waits
// for its children (at least one of its activations was started by a
// child's wakeup from its final activation: the exit's notification of
// a sleeping parent) needs as many of the parent's children to have
// exited as the trace shows exited at the fork's time. The replay's
// parent, reaching the fork with fewer, sleeps there (in the wait the
// trace hid) until enough of its children have exited, and forks then.
// A parent that forks all its children before any exits (hackbench,
// perf, schbench's threads) needs nothing.
type forkWaitPlan struct {
	// need: per edge, for a fork edge the child exits it waits for (0:
	// none).
	need []int32
	// parent: per task, the fork parent whose count its exit adds to
	// (-1: none).
	parent []int32
	// exits: per task, the child exits the replay counts for it.
	exits []int32
	// notify: per edge, true for a child's exit notification of its
	// waiting parent (the wakeup from its final activation): do_wait can
	// reap the child from then (exit_notify makes it a zombie before it
	// wakes the parent), so its exit counts there, not at its switch-out.
	notify []bool
}

// newForkWaitPlan: the plan of w (empty when !on).
func newForkWaitPlan(w *Workload, on bool) *forkWaitPlan {
	p := &forkWaitPlan{need: make([]int32, len(w.Edges)), parent: make([]int32, len(w.Tasks)), exits: make([]int32, len(w.Tasks)), notify: make([]bool, len(w.Edges))}
	for i := range p.parent {
		p.parent[i] = -1
	}
	if !on {
		return p
	}
	parent, _ := w.forkParents()
	// Parents that wait: a child's wakeup from its final activation, one
	// that exits, started one of the parent's activations. A child's exit
	// notification is its last wakeup of the parent there, when it has as
	// many as any of the parent's children; a wakeup of the parent from D
	// is not one (wokeFromD: a vfork child wakes its parent first at its
	// vfork done, and one whose parent had not yet slept in wait() at its
	// exit notified nobody, so that its one wakeup is the vfork done's,
	// its exit counting at its switch-out; a clone stressor's vfork
	// children wake their parent only so, most of them). reap.go's
	// child-exit edge, the last edge of the final activation, takes the
	// same test (mayNotifyExit).
	type child struct {
		idx   int32
		wakes []int32 // its causal wakeups of the parent in its final activation
	}
	kids := map[int32][]child{}
	for ci := range w.Tasks {
		par := parent[ci]
		acts := w.Tasks[ci].Activations
		if par < 0 || len(acts) == 0 || acts[len(acts)-1].End != EndExit {
			continue
		}
		last := &acts[len(acts)-1]
		k := child{idx: int32(ci)}
		for i := last.EdgeLo; i < last.EdgeHi; i++ {
			if e := &w.Edges[i]; e.Causal && mayNotifyExit(w, last, e, par) {
				k.wakes = append(k.wakes, i)
			}
		}
		kids[par] = append(kids[par], k)
	}
	waits := make([]bool, len(w.Tasks))
	exitsAt := map[int32][]int64{} // per parent, its children's exits (notification or switch-out)
	for par, ks := range kids {
		usual := 0
		for _, k := range ks {
			usual = max(usual, len(k.wakes))
		}
		for _, k := range ks {
			at := w.Tasks[k.idx].ExitNS
			if usual > 0 && len(k.wakes) == usual {
				i := k.wakes[len(k.wakes)-1]
				waits[par], p.notify[i], at = true, true, w.Edges[i].TimeNS
			}
			exitsAt[par] = append(exitsAt[par], at)
		}
	}
	// Sorted, each fork's need is a binary search (a fork stressor's
	// parent has tens of thousands of children), the unknown exits (0)
	// first and left out.
	unknown := map[int32]int{}
	for par, xs := range exitsAt {
		slices.Sort(xs)
		n, _ := slices.BinarySearch(xs, 1)
		unknown[par] = n
	}
	for i := range w.Edges {
		e := &w.Edges[i]
		par := e.Waker
		if e.Kind != EdgeFork || !e.Causal || !waits[par] || parent[e.Wakee] != par {
			continue
		}
		before, _ := slices.BinarySearch(exitsAt[par], e.TimeNS)
		p.need[i] = int32(before - unknown[par])
	}
	for par, ks := range kids {
		if !waits[par] {
			continue
		}
		for _, k := range ks {
			p.parent[k.idx] = par
		}
		p.exits[par] = int32(len(ks))
	}
	return p
}

// forkWaits: t, running on r, is about to fire fork edge idx with fewer
// of its children exited than the edge needs: it sleeps there in the
// wait the trace hid (forkWaitPlan) and reports true; the fork fires
// when it runs again with enough.
func (s *Sim) forkWaits(r *rq, t *simTask, idx int) bool {
	need := s.forkWait.need[idx]
	if need == 0 || t.forkExits >= need {
		return false
	}
	t.forkWaitNeed = need
	s.stats.ForkWaits++
	s.sleepMidActivation(r, t)
	return true
}

// forkWaitExit: child t, on cpu, has notified its parent of its exit,
// or exited or stopped for good without one: its parent counts it once,
// and wakes if it sleeps before a fork that needed it.
func (s *Sim) forkWaitExit(t *simTask, cpu int) {
	par := s.countForkExit(t)
	if par != nil && par.forkWaitNeed > 0 && par.forkExits >= par.forkWaitNeed && par.state == tsSleeping {
		par.forkWaitNeed = 0
		s.placeWoken(par, t, cpu)
	}
}

// countForkExit counts t's exit once for its parent's fork waits and
// returns that parent (nil: none, or counted before).
func (s *Sim) countForkExit(t *simTask) *simTask {
	pi := s.forkWait.parent[t.id]
	if pi < 0 || t.forkCounted {
		return nil
	}
	t.forkCounted = true
	par := s.tasks[pi]
	par.forkExits++
	return par
}

// wokeFromD: wake edge e woke its wakee from a block in D
// (TASK_UNINTERRUPTIBLE). do_wait sleeps in S (TASK_INTERRUPTIBLE), so a
// child's wakeup of a parent in D is not its exit's notification: it is
// the vfork done (mm_release completing the parent's vfork wait, early in
// do_exit or at exec), after which the child still runs its exit, with
// preemption points (stress-ng's clone stressor, whose clones are vforks:
// 1.6 ms of exit after it, preempted there by the parent).
func wokeFromD(w *Workload, e *Edge) bool {
	if e.WakeeAct < 1 {
		return false
	}
	st := w.Tasks[e.Wakee].Activations[e.WakeeAct-1].EndState
	return st != "" && st[0] == 'D'
}
