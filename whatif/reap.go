package whatif

import "slices"

// Reaping: a parent that waits for any of its children.
//
// In the kernel a child's exit notifies its parent (exit_notify calls
// do_notify_parent, which calls __wake_up_parent on the parent's
// wait_chldexit queue), and a parent sleeping in wait4() for any child
// (pid -1) is woken by whichever child exits first; do_wait's
// wait_consider_task reaps any zombie child it finds, so a wait() called
// while a child is already a zombie returns without sleeping. Which
// child's exit started one of the parent's activations in the trace is
// then an accident of the trace's exit order, not a dependency on that
// child. A wait for one particular child (waitpid(pid), pthread_join)
// is only woken by that child (child_wait_callback skips the others).
//
// reapPlan finds, from the workload's structure, each parent whose wakeups
// by its children's exits are interchangeable and gives each of those
// wakeups (reap edges) and each activation they started (reap
// activations) what the replay needs:
//
//   - a child-exit edge is a wakeup of the waker's fork parent, the last
//     edge of the waker's final activation, which ends in exit, at most
//     exitNotifyMaxNS of demand before its end (the exit's notification),
//     that did not wake the parent from D (wokeFromD: a vfork done, the
//     exit still to run); a child whose exit has no such edge (the parent
//     was running, so no wakeup was recorded) still counts, at its exit;
//   - a parent waits for any child when its causal child-exit wakeups
//     (the ones that started one of its activations) do not come in its
//     children's fork order. A parent waiting for each child in turn (in
//     fork order: stress-ng's waitpid loop, schbench's pthread_join) only
//     sleeps for the one it waits for, so its wakeups come in fork order;
//     the trace has no wait flags, so this is inferred from the effect,
//     and a parent whose children happened to exit in fork order keeps
//     the trace's pairing (it changes nothing there);
//   - reap activation j of such a parent needs as many child exits as the
//     trace had seen when it started (the exits before its causal one,
//     causal or not, plus that one): in the replay it starts at the
//     replay's exit of that rank, from any child. At that point the
//     parent has had as many children to reap as in the trace;
//   - each activation of such a parent ends only when as many children
//     have exited as had by its block or exit in the trace (endNeed): a
//     parent cannot get past a wait() before a child it reaped exits.
//
// In the replay (Config.ReapAnyChild; Sim.childExit, Sim.endActivation)
// every exit of such a parent's children counts once; the parent, asleep
// before a reap activation, starts it when the count reaches the
// activation's need; a parent ending the activation before it with the
// count already there continues at once, as wait() returns with a zombie
// at hand; a parent that has run an activation's demand with fewer exits
// than its end needs sleeps in wait() until enough children exit.
type reapPlan struct {
	// edge: per edge, true for a child-exit edge of a wait-any parent.
	edge []bool
	// atExit: per task, the child of a wait-any parent whose exit has no
	// child-exit edge (the parent was running then, so try_to_wake_up
	// recorded nothing): its exit is counted when it exits.
	atExit []bool
	// parent: per task, its fork parent (-1 none).
	parent []int32
	// need: per (task, activation) flattened by Sim.actBase, the child
	// exits a reap activation needs (0: not a reap activation).
	need []int32
	// endNeed: per (task, activation) like need, the child exits the
	// activation's end needs: how many of the parent's children had
	// exited in the trace when it blocked or exited (0: no bound).
	endNeed []int32
	// exits: per task, how many of its children's exits the replay counts
	// (0 for tasks that are not wait-any parents).
	exits []int32
}

// exitNotifyMaxNS bounds the demand a child runs after its exit's wakeup
// of its parent: exit_notify comes late in do_exit, so the recorded
// wakeups of the parent by exit notifications run 33-240 us before the
// switch-out in state X on the guests' hackbench (a few 1.7-11.5 ms);
// a wakeup seconds before the exit (a stress-ng sleep thread's futex)
// is something else.
const exitNotifyMaxNS = 20_000_000

// mayNotifyExit: edge e of a child's final activation last can be the
// child's exit notification of its parent par, the test the reap plan and
// the fork wait's share: a wakeup of par at most exitNotifyMaxNS of demand
// before the activation's end, and not one from D (wokeFromD: a vfork
// done, the exit still to run).
func mayNotifyExit(w *Workload, last *Activation, e *Edge, par int32) bool {
	return e.Kind == EdgeWake && e.Wakee == par && last.DemandNS-e.OffsetNS <= exitNotifyMaxNS && !wokeFromD(w, e)
}

// newReapPlan: the plan of w (an empty one when !on: every parent keeps
// the trace's pairing).
func newReapPlan(w *Workload, actBase []int32, on bool) *reapPlan {
	n := len(w.Tasks)
	p := &reapPlan{edge: make([]bool, len(w.Edges)), atExit: make([]bool, n), parent: make([]int32, n), need: make([]int32, actBase[n]), endNeed: make([]int32, actBase[n]), exits: make([]int32, n)}
	if !on {
		return p
	}
	var forkAt []int64
	p.parent, forkAt = w.forkParents()
	// Each parent's exiting children: the child-exit edge (-1: none) and
	// when the exit notification happened in the trace.
	type exit struct {
		child, edge int32
		at          int64
	}
	byParent := map[int32][]exit{}
	for ci := range w.Tasks {
		c := &w.Tasks[ci]
		par := p.parent[ci]
		if par < 0 || len(c.Activations) == 0 {
			continue
		}
		last := &c.Activations[len(c.Activations)-1]
		if last.End != EndExit {
			continue
		}
		x := exit{child: int32(ci), edge: -1, at: c.ExitNS}
		if last.EdgeHi > last.EdgeLo {
			i := last.EdgeHi - 1
			if e := &w.Edges[i]; mayNotifyExit(w, last, e, par) {
				x.edge, x.at = i, e.TimeNS
			}
		}
		byParent[par] = append(byParent[par], x)
	}
	for par, xs := range byParent {
		slices.SortFunc(xs, func(a, b exit) int {
			if a.at != b.at {
				if a.at < b.at {
					return -1
				}
				return 1
			}
			return int(a.child - b.child)
		})
		// Wait-any: the causal child-exit wakeups are not in fork order.
		anyOrder := false
		prev := int64(-1)
		causal := 0
		for _, x := range xs {
			if x.edge < 0 || !w.Edges[x.edge].Causal {
				continue
			}
			causal++
			if forkAt[x.child] < prev {
				anyOrder = true
			}
			prev = max(prev, forkAt[x.child])
		}
		if !anyOrder || causal < 2 {
			continue
		}
		rank := int32(0)
		for _, x := range xs {
			if x.edge < 0 {
				p.atExit[x.child] = true
				rank++
				p.exits[par]++
				continue
			}
			rank++
			p.exits[par]++
			p.edge[x.edge] = true
			if e := &w.Edges[x.edge]; e.Causal {
				p.need[actBase[par]+e.WakeeAct] = rank
			}
		}
		// The end of each activation: the exits seen by then.
		acts := w.Tasks[par].Activations
		for k := range acts {
			var end int64
			switch {
			case k+1 < len(acts):
				end = acts[k+1].ReleaseNS - acts[k+1].SleepNS
			case acts[k].End == EndExit:
				end = w.Tasks[par].ExitNS
			default:
				continue
			}
			r := int32(0)
			for _, x := range xs {
				if x.at <= end {
					r++
				}
			}
			p.endNeed[actBase[par]+int32(k)] = r
		}
	}
	return p
}

// forkParents: per task, its fork parent (the waker of its first causal
// fork edge; -1: none) and that fork's time.
func (w *Workload) forkParents() (parent []int32, forkAt []int64) {
	parent, forkAt = make([]int32, len(w.Tasks)), make([]int64, len(w.Tasks))
	for i := range parent {
		parent[i] = -1
	}
	for _, e := range w.Edges {
		if e.Kind == EdgeFork && e.Causal && parent[e.Wakee] < 0 {
			parent[e.Wakee], forkAt[e.Wakee] = e.Waker, e.TimeNS
		}
	}
	return parent, forkAt
}

// reapReady: activation k of t is a reap activation whose child exits
// have all happened.
func (s *Sim) reapReady(t *simTask, k int32) bool {
	n := s.reap.need[s.actBase[t.id]+k]
	return n > 0 && t.childExits >= n
}

// reapWaitEnd: t, a parent waiting for any child, has run activation k's
// demand, but fewer of its children have exited than it had reaped by
// that point in the trace: its wait() finds no zombie with children
// left, and it sleeps until the next exit (do_wait).
func (s *Sim) reapWaitEnd(t *simTask, k int32) bool {
	n := s.reap.endNeed[s.actBase[t.id]+k]
	return n > 0 && t.childExits < n
}

// childExit is a child's exit notification to parent (do_notify_parent,
// __wake_up_parent) for a parent that waits for any child: one more
// zombie. If the parent sleeps before a reap activation whose exits have
// now all happened, it wakes (the wakeup is the child's, from the CPU it
// exits on); otherwise the exit waits to be reaped, by a later wakeup or
// by a wait() that finds it at once (endActivation).
func (s *Sim) childExit(child, parent *simTask, cpu int) {
	parent.childExits++
	s.stats.ChildExits++
	if parent.waitEnd {
		if parent.state == tsSleeping && !s.reapWaitEnd(parent, parent.act) {
			// Back into the activation it was finishing (nothing left to
			// run): it blocks, exits or continues from there.
			parent.waitEnd = false
			s.stats.ReapWakeups++
			s.placeWoken(parent, child, cpu)
		}
		return
	}
	k := parent.act + 1
	if int(k) >= len(parent.trig) || parent.trig[k] || !s.reapReady(parent, k) {
		return
	}
	if parent.state == tsSleeping || parent.state == tsNotStarted && k == 0 {
		s.stats.ReapWakeups++
		s.wake(parent, k, child, cpu)
	}
}
