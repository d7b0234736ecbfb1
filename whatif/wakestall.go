package whatif

// A wakeup whose waker's vCPU was descheduled inside try_to_wake_up.
//
// try_to_wake_up writes sched_waking first, then picks the CPU (a
// sched_migrate_task if it moves the task), then enqueues the wakee (the
// target's update_curr and, with schedstats, the wakee's
// sched_stat_sleep): some 75 µs on the guests' emulated vCPUs. A host that
// deschedules the waker's vCPU in between leaves the wakee sleeping until
// the vCPU runs again, while its latency, measured from the waking, runs
// on. The trace shows it as a host stall of the waker (hoststall.go)
// between the waking (or its migration) and the enqueue's first record
// (Edge.EnqueueAfterStall, marked by extraction). On guest-D's second
// hackbench boot 226 of 6,227 wakings took over 1 ms from the waking to
// the enqueue, 89 of them among the 313 waits at or above the p95;
// without those delays its p95 would be 15.5 ms instead of 18.0
// (FIDELITY.md round 86).
//
// The replay runs such a wakeup up to select_task_rq where the edge fires
// (its sched_waking, the CPU it goes to, the migration record: the trace
// shows them before the stall) and holds the rest (the enqueue, the
// wakeup preemption) until the waker's progress passes the end of that
// stall, the first of its activation's stalls starting within a tick
// plus the tolerance after the edge (the stall is dated from the first
// tick it missed). Only a wakeup onto another CPU is held: on guest-D's
// second hackbench boot the trace's wakeups stalled so went to another
// CPU at 114 of 154 (the wakee's own, mostly), where its wakeups at large
// go to the waker's CPU at 80 %; a remote enqueue takes the target's run
// queue lock, whose holder's vCPU the host may have descheduled. Holding
// the replay's wakeups onto the waker's own CPU too made that place's
// waits far longer than the trace's (FIDELITY.md round 86). The stall
// travels with the waker's demand, so a waker the replay runs later or on
// a less contended host (stallcontention.go) releases it accordingly.

// heldWake is a wakeup whose enqueue waits for its waker's progress: its
// CPU chosen (select_task_rq ran before the stall), not yet queued.
type heldWake struct {
	t              *simTask
	k              int32
	at             int64 // the waker's progress that releases it
	wokeNS         int64 // when its sched_waking was written
	src, prev, cpu int   // selectWoken's (src: the waker's CPU then)
}

// wakeStallEnd is the progress of waker t, firing edge e, that e's
// enqueue waits for: the end of its first host stall from e's offset, if
// e is EnqueueAfterStall and that stall starts within a tick plus the
// tolerance of it; -1 otherwise, or without Config.WakeStall.
func (s *Sim) wakeStallEnd(t *simTask, e *Edge) int64 {
	if !s.cfg.WakeStall || !e.EnqueueAfterStall || t.act < 0 || !s.stallsInDemand() {
		return -1
	}
	a := &t.w.Activations[t.act]
	win := s.w.Stalls.TickNS + stallToleranceNS
	for i := t.nextStall; i < a.StallHi; i++ {
		h := &s.w.HostStalls[i]
		if h.OffsetNS < e.OffsetNS {
			continue
		}
		if h.OffsetNS-e.OffsetNS > win {
			return -1
		}
		if end := min(h.OffsetNS+h.LenNS, a.DemandNS); end > t.progress {
			return end
		}
		return -1
	}
	return -1
}

// holdWake is try_to_wake_up of t's activation k by waker up to
// select_task_rq (its sched_waking and migration record written now); the
// enqueue onto another CPU than the waker's waits until waker's progress
// reaches at, one onto the waker's own goes on at once.
func (s *Sim) holdWake(t *simTask, k int32, waker *simTask, wakerCPU int, at int64) {
	src, prev, cpu := s.selectWoken(t, waker, wakerCPU)
	if cpu == wakerCPU {
		// Queued on the waker's own CPU: no remote run queue to wait
		// for, no hold.
		s.startActivation(t, k)
		s.queueWoken(t, waker, wakerCPU, src, prev, cpu)
		return
	}
	waker.heldWakes = append(waker.heldWakes, heldWake{t: t, k: k, at: at, wokeNS: s.now, src: src, prev: prev, cpu: cpu})
	s.stats.WakesAfterStall++
}

// releaseWakes queues the wakeups running task t holds whose progress has
// come (all of them with all set: t's activation ends or it stops), in
// the order it made them.
func (s *Sim) releaseWakes(t *simTask, all bool) {
	for i := 0; i < len(t.heldWakes); {
		h := t.heldWakes[i]
		if !all && h.at > t.progress {
			i++
			continue
		}
		t.heldWakes = append(t.heldWakes[:i], t.heldWakes[i+1:]...)
		w := h.t
		if !(w.state == tsSleeping && w.act == h.k-1) && !(w.state == tsNotStarted && h.k == 0) {
			continue
		}
		s.stats.WakeAfterStallNS += s.now - h.wokeNS
		s.startActivation(w, h.k)
		s.queueWoken(w, t, h.src, h.src, h.prev, h.cpu)
	}
}
