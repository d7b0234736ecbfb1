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
// The replay writes such a wakeup's sched_waking where the edge fires and
// holds the rest (select_task_rq, the enqueue, the wakeup preemption)
// until the waker's progress passes the end of that stall, the first of
// its activation's stalls starting within a tick (the stall is dated from
// the first tick it missed) after the edge. The stall travels with the
// waker's demand, so a waker the replay runs later or on a less contended
// host (stallcontention.go) releases it accordingly.

// heldWake is a wakeup whose enqueue waits for its waker's progress.
type heldWake struct {
	t      *simTask
	k      int32
	at     int64 // the waker's progress that releases it
	wokeNS int64 // when its sched_waking was written
	sync   bool
}

// wakeStallEnd is the progress of waker t, firing edge e, that e's
// enqueue waits for: the end of its first host stall from e's offset, if
// e is EnqueueAfterStall and that stall starts within a tick plus the
// tolerance of it; -1 otherwise, or without Config.WakeStall.
func (s *Sim) wakeStallEnd(t *simTask, e *Edge) int64 {
	if !s.cfg.WakeStall || !e.EnqueueAfterStall || t.act < 0 || !s.cfg.IdleWake || s.cfg.HostStallCPU || s.w.Stalls == nil {
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

// holdWake writes t's sched_waking by waker now and holds its activation
// k's enqueue until waker's progress reaches at.
func (s *Sim) holdWake(t *simTask, k int32, waker *simTask, wakerCPU int, at int64) {
	s.emitWaking(t, waker, wakerCPU, int(t.cpu))
	waker.heldWakes = append(waker.heldWakes, heldWake{t: t, k: k, at: at, wokeNS: s.now, sync: s.syncWake})
	s.stats.WakesAfterStall++
}

// releaseWakes enqueues the wakeups running task t holds whose progress
// has come (all of them with all set: t's activation ends), in the order
// it made them.
func (s *Sim) releaseWakes(r *rq, t *simTask, all bool) {
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
		s.wakingEmitted, s.syncWake = true, h.sync
		s.placeWoken(w, t, r.cpu)
		s.wakingEmitted, s.syncWake = false, false
	}
}
