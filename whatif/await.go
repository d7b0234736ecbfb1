package whatif

import "slices"

// Replies the trace hid (Edge.Awaits).
//
// A request/reply pair (stress-ng's switch stressor over a pipe,
// schbench's worker posting its message thread) shows two patterns in a
// trace. When the wakee does not preempt its waker, the waker blocks
// right after the wakeup (in read(), in futex_wait()) and the wakee's
// reply wakes it: two wakeups per exchange, both in the workload. When
// the wakee preempts the waker at the wakeup, it runs, replies and blocks
// before the waker runs again; the reply finds the waker runnable and
// leaves no wakeup, and the waker, back on the CPU, finds it and goes on
// without sleeping: one wakeup, and one activation of the waker spanning
// several exchanges. Replayed as recorded, the second pattern made the
// waker independent of its wakee: where the replay's wakee did not
// preempt, the waker ran on into its next request while the wakee was
// still queued, and the wakee's activations merged (FIDELITY.md rounds 13,
// 34 and 35: stress-ng's missing switch wakeups). The kernel would have
// blocked the waker instead.
//
// So an edge whose wakee preempted its waker in the trace and ended its
// activation before the waker ran again is marked Awaits when the pair's
// other exchanges show the request/reply pattern: at least
// minReplyExchanges wakeups of this wakee after which the waker blocked
// within syncWindowNS of demand, and for more than half of them the
// waker's next activation was woken by this wakee. A producer (a
// hackbench sender writing to a receiver that preempts it) does not
// block after its writes and is left alone.
//
// With Config.ReplyAwaits (off by default: measured, it met fewer goals,
// round 35) the replay adds each marked edge's reply (withReplyEdges) and
// the waker stops at its preemption point (OffsetNS+NoPreemptNS): switched
// out runnable if its wakeup's reschedule is pending there, as in the
// trace; else, if the reply has not come, asleep there
// (Stats.RepliesAwaited) until the reply, or the end of the wakee's
// activation, wakes it from the wakee's CPU; and the wakee's reply to a
// waker it preempted is read without a wakeup (replyFindsRunnable).

// minReplyExchanges: the blocking exchanges a pair needs to count as
// request/reply.
const minReplyExchanges = 3

// A broadcast's hidden wait (Config.HerdAwaits).
//
// hackbench and perf bench sched messaging start their threads with a
// barrier: each thread writes a byte to the main thread's ready pipe and
// polls the start pipe; the main thread, woken by the last ready write,
// writes the start byte, and that one write wakes every poller (a herd).
// In the trace the last thread created, whose ready write woke the main
// thread, is preempted by it at once (guest-P's 6.1 messaging r3: sender
// 545 switched out runnable 34 µs after its ready write) and runs again only
// after the herd, so it never sleeps in poll: its activation runs from
// the ready write straight into its sends, with no wakeup to wait for.
// The replay, where that thread is not preempted there, ran it on into
// its sends before the main thread's herd, its writes woke receivers
// still waiting for the start (taken as their next wakeups) and the
// receivers' activations shifted against their wakers' from then on.
//
// Such an edge is an Awaits candidate (the wakee preempted its waker and
// ended its activation before the waker ran again); it is a herd's when
// that activation of the wakee woke at least minHerd other tasks of the
// waker's command: work the waker's peers were waiting for, which the
// waker, runnable, would have waited for too had it got that far. With
// Config.HerdAwaits (on by default) the replay makes the waker wait at
// its preemption point for the wakee's first wakeup of a peer in that
// activation (withReplyEdges), as ReplyAwaits does for request/reply
// pairs. The rule also takes in exchanges inside a run (a messaging
// receiver whose read woke a sender blocked on its full pipe, a schbench
// worker whose request woke its message thread): there too the waker
// did not run again before the wakee's whole activation, so the wait
// keeps an order the trace shows, and is never longer than the trace's.
// 35 recordings of hackbench, messaging and schbench have such edges
// (FIDELITY.md round 123).
const minHerd = 3

// herdOf is how many tasks of e's waker's command, other than the waker,
// the activation e started woke (causal wakeups), and the offset of the
// first of those wakeups in it.
func (w *Workload) herdOf(e *Edge) (n int, at int64) {
	if e.Kind != EdgeWake || int(e.WakeeAct) >= len(w.Tasks[e.Wakee].Activations) {
		return 0, 0
	}
	a := &w.Tasks[e.Wakee].Activations[e.WakeeAct]
	comm := w.Tasks[e.Waker].Comm
	var seen []int32
	for i := a.EdgeLo; i < a.EdgeHi; i++ {
		h := &w.Edges[i]
		if h.Kind != EdgeWake || !h.Causal || h.Wakee == e.Waker || w.Tasks[h.Wakee].Comm != comm || slices.Contains(seen, h.Wakee) {
			continue
		}
		if len(seen) == 0 {
			at = h.OffsetNS
		}
		seen = append(seen, h.Wakee)
		if len(seen) >= minHerd {
			break
		}
	}
	return len(seen), at
}

// isHerd: e's wait is a broadcast's (herdOf), not a request/reply pair's.
func (w *Workload) isHerd(e *Edge) bool {
	n, _ := w.herdOf(e)
	return n >= minHerd
}

// AwaitCounts counts w's Awaits edges: the broadcasts' (isHerd), which a
// replay waits for by default, and the request/reply pairs', which it
// waits for with Config.ReplyAwaits.
func (w *Workload) AwaitCounts() (herds, replies int) {
	for i := range w.Edges {
		if e := &w.Edges[i]; e.Awaits {
			if w.isHerd(e) {
				herds++
			} else {
				replies++
			}
		}
	}
	return herds, replies
}

// keepRequestReplyAwaits keeps Awaits only on the edges of request/reply
// pairs and herds (isHerd) whose waker has demand left after its
// preemption point. It needs the edge index (Workload.index).
func (w *Workload) keepRequestReplyAwaits() {
	type pair struct{ waker, wakee int32 }
	var blocks, replies map[pair]int
	for i := range w.Edges {
		if w.Edges[i].Awaits {
			blocks, replies = map[pair]int{}, map[pair]int{}
			break
		}
	}
	if blocks == nil {
		return
	}
	cause := w.wakeCauses()
	for ti := range w.Tasks {
		acts := w.Tasks[ti].Activations
		for k := range acts {
			a := &acts[k]
			if a.End != EndSleep || a.EdgeHi == a.EdgeLo {
				continue
			}
			e := &w.Edges[a.EdgeHi-1]
			if !e.Causal || e.Kind != EdgeWake || e.Wakee == int32(ti) || a.DemandNS-e.OffsetNS > syncWindowNS {
				continue
			}
			p := pair{int32(ti), e.Wakee}
			blocks[p]++
			if wk, ok := cause[[2]int32{int32(ti), int32(k + 1)}]; ok && wk == e.Wakee {
				replies[p]++
			}
		}
	}
	for i := range w.Edges {
		e := &w.Edges[i]
		if !e.Awaits {
			continue
		}
		// The waker needs demand left after its preemption point; a
		// pair, besides, the exchanges that make it one.
		drop := e.OffsetNS+e.NoPreemptNS >= w.Tasks[e.Waker].Activations[e.WakerAct].DemandNS
		if !drop && !w.isHerd(e) {
			p := pair{e.Waker, e.Wakee}
			drop = blocks[p] < minReplyExchanges || 2*replies[p] <= blocks[p]
		}
		if drop {
			e.Awaits = false
		}
	}
}

// wakeCauses maps each activation started by a task's wakeup (task,
// activation) to its waker.
func (w *Workload) wakeCauses() map[[2]int32]int32 {
	cause := map[[2]int32]int32{}
	for _, e := range w.Edges {
		if e.Causal && e.Kind == EdgeWake {
			cause[[2]int32{e.Wakee, e.WakeeAct}] = e.Waker
		}
	}
	return cause
}

// withReplyEdges is w with the replies (EdgeReply) of its Awaits edges
// added, for a replay with Config.ReplyAwaits (reply: request/reply
// pairs) or Config.HerdAwaits (herd: herds) (w itself is not changed): in
// the wakee's activation, a herd's at its first wakeup of a sibling of
// the waker (herdOf), a pair's as far before its end as the pair's
// replies the trace shows come before the replier's block (their median;
// at the end without any).
func (w *Workload) withReplyEdges(reply, herd bool) *Workload {
	type pair struct{ waker, wakee int32 }
	var cause map[[2]int32]int32
	tails := map[pair][]int64{} // per (request's waker, wakee): the wakee's demand after its replies
	var added []Edge
	for _, e := range w.Edges {
		if !e.Awaits {
			continue
		}
		if n, at := w.herdOf(&e); n >= minHerd {
			if herd {
				added = append(added, Edge{Kind: EdgeReply, Waker: e.Wakee, WakerAct: e.WakeeAct, OffsetNS: at,
					Wakee: e.Waker, WakeeAct: e.WakerAct, TimeNS: e.TimeNS, WakerCPU: e.Target, Target: e.WakerCPU, Sync: e.Sync})
			}
			continue
		}
		if !reply {
			continue
		}
		if cause == nil {
			cause = w.wakeCauses()
			for _, r := range w.Edges {
				// A reply: a wakeup of the task that started the waker's
				// activation.
				if req, ok := cause[[2]int32{r.Waker, r.WakerAct}]; ok && r.Causal && r.Kind == EdgeWake && req == r.Wakee {
					p := pair{r.Wakee, r.Waker}
					tails[p] = append(tails[p], w.Tasks[r.Waker].Activations[r.WakerAct].DemandNS-r.OffsetNS)
				}
			}
			for _, ts := range tails {
				slices.Sort(ts)
			}
		}
		d := w.Tasks[e.Wakee].Activations[e.WakeeAct].DemandNS
		at := d
		if ts := tails[pair{e.Waker, e.Wakee}]; len(ts) > 0 {
			at = max(0, d-ts[(len(ts)-1)/2])
		}
		added = append(added, Edge{Kind: EdgeReply, Waker: e.Wakee, WakerAct: e.WakeeAct, OffsetNS: at,
			Wakee: e.Waker, WakeeAct: e.WakerAct, TimeNS: e.TimeNS, WakerCPU: e.Target, Target: e.WakerCPU, Sync: e.Sync})
	}
	if len(added) == 0 {
		return w
	}
	c := *w
	c.Edges = append(slices.Clone(w.Edges), added...)
	c.Tasks = slices.Clone(w.Tasks)
	for i := range c.Tasks {
		c.Tasks[i].Activations = slices.Clone(c.Tasks[i].Activations)
	}
	c.Index()
	return &c
}

// awaitReply: t's wake edge e (Awaits) started or made pending activation
// k of wakee; t waits for its end at its preemption point.
func (s *Sim) awaitReply(t, wakee *simTask, k int32, e *Edge) {
	if herd := s.w.isHerd(e); herd && !s.cfg.HerdAwaits || !herd && !s.cfg.ReplyAwaits {
		return
	}
	t.awaitOn, t.awaitK, t.awaitAt, t.awaitSync = wakee, k, e.OffsetNS+e.NoPreemptNS, e.Sync
	wakee.waiters = append(wakee.waiters, t)
}

// awaitPoint: t, running on r, reached its await point before the reply.
// The await point is where the trace shows t's preemption point after the
// wakeup (Edge.NoPreemptNS): a reschedule t's own wakeup raised on its CPU
// switches it out there, runnable, as in the trace (the wakee then replies
// before t runs again, or t waits when it does), whatever delay was drawn
// for it; otherwise t goes on into the call that waits, and sleeps there,
// inside its activation.
func (s *Sim) awaitPoint(r *rq, t *simTask) {
	if r.reschedPending && (r.reschedOwn || r.reschedAt <= s.now) {
		s.preempt(r)
		return
	}
	t.awaiting = true
	s.stats.RepliesAwaited++
	s.sleepMidActivation(r, t)
}

// reply is b's EdgeReply to w, running on cpu: it releases w if w awaits
// b's current activation (or an earlier one).
func (s *Sim) reply(b, w *simTask, cpu int) {
	if w.awaitOn == b && w.awaitK <= b.act {
		s.release(w, b, cpu)
	}
}

// release ends w's wait for b, waking it from b's cpu if it sleeps at its
// await point.
func (s *Sim) release(w, b *simTask, cpu int) {
	w.awaitOn = nil
	if w.awaiting {
		w.awaiting = false
		if w.state == tsSleeping {
			s.syncWake = w.awaitSync
			s.placeWoken(w, b, cpu)
			s.syncWake = false
		}
	}
}

// releaseWaiters: b, on cpu, ended activation k (all: b stops for good);
// the tasks awaiting it (or an earlier one) are released, and those
// asleep at their await point are woken by b.
func (s *Sim) releaseWaiters(b *simTask, k int32, all bool, cpu int) {
	if len(b.waiters) == 0 {
		return
	}
	keep := b.waiters[:0]
	for _, w := range b.waiters {
		if w.awaitOn != b {
			continue // released before, or awaiting another task now
		}
		if !all && w.awaitK > k {
			keep = append(keep, w)
			continue
		}
		s.release(w, b, cpu)
	}
	clear(b.waiters[len(keep):])
	b.waiters = keep
}

// releaseStranded wakes, as an interrupt would, any task still asleep at
// an await point when nothing else is left to run, which the invariants
// would otherwise report: awaits that wait in a circle (a workload made
// by hand; extracted ones follow the trace's order, FuzzExtractReplay)
// or a wakee stopped without ending the activation. It reports whether
// it woke one.
func (s *Sim) releaseStranded() bool {
	woke := false
	for _, t := range s.tasks {
		if t.forkWaitNeed > 0 && t.state == tsSleeping {
			// Its children cannot all exit (one was stopped unrun, or a
			// workload made by hand): it forks now.
			t.forkWaitNeed = 0
			s.stats.ForkWaitsStranded++
			s.placeWoken(t, nil, -1)
			woke = true
			continue
		}
		if t.awaiting && t.state == tsSleeping {
			t.awaiting, t.awaitOn = false, nil
			s.stats.AwaitsStranded++
			s.placeWoken(t, nil, -1)
			woke = true
		}
	}
	return woke
}

// replyFindsRunnable: with ReplyAwaits, a reply to t's request sent from
// the CPU where t waits preempted (its replier took the CPU from it) is
// not held for t's block (isReply): t, runnable, reads the reply when it
// runs again and goes on without sleeping, as the trace's preempted
// exchanges show (their replies left no wakeup). Held, t blocks and is
// woken at once: a wakeup the kernel would not make.
func (s *Sim) replyFindsRunnable(t *simTask, wakerCPU int) bool {
	return s.cfg.ReplyAwaits && t.state == tsQueued && int(t.cpu) == wakerCPU
}
