package whatif

// EEVDF run-queue discipline (v6.6+, kernel-lb.md §5.7): per entity a
// deadline, a slice (base_slice) and a lag; per cfs_rq the load-weighted
// sum of (vruntime − min_vruntime) and the total weight of the queued (not
// running) entities, from which avg_vruntime V and eligibility
// (vruntime <= V) follow exactly in integers. Selected with
// Config.RunQueue = "eevdf" or by a policy's Knobs.EEVDF. It replaces CFS's
// place_entity, check_preempt_tick, check_preempt_wakeup and
// pick_next_entity; everything else is shared. Delayed dequeue (v6.12+),
// the 0.70 ms base slice, each version's update_curr reschedule rule,
// PLACE_REL_DEADLINE, the lag clamp and the deadline-sorted tree are
// knobs. Not modelled: custom slices (so PREEMPT_SHORT's wakeup rule never
// applies), and 6.6's pick among equal deadlines (its tree was sorted by
// vruntime and its heap search started from curr, so a tie went by the
// tree's shape; here a queued entity wins, the smaller vruntime first).

// avgAdd / avgSub maintain avg_vruntime/avg_load (avg_vruntime_add/sub)
// for an entity entering or leaving the tree.
func (r *rq) avgAdd(t *simTask) {
	w := int64(t.weight)
	r.avgVruntime += (t.vruntime - r.minVruntime) * w
	r.avgLoad += w
}

func (r *rq) avgSub(t *simTask) {
	w := int64(t.weight)
	r.avgVruntime -= (t.vruntime - r.minVruntime) * w
	r.avgLoad -= w
}

// currOnRQ is the running CFS entity if it is still queued (on_rq).
func (r *rq) currOnRQ() *simTask {
	if c := r.curr; c != nil && !c.rt && c.state == tsRunning {
		return c
	}
	return nil
}

// floorDiv divides rounding towards −∞ (the kernel biases avg_vruntime so).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// avgVruntimeOf is avg_vruntime(): V, the load-weighted average vruntime
// of the queued entities and the running one.
func (r *rq) avgVruntimeOf() int64 {
	avg, load := r.avgVruntime, r.avgLoad
	if c := r.currOnRQ(); c != nil {
		w := int64(c.weight)
		avg += (c.vruntime - r.minVruntime) * w
		load += w
	}
	if load > 0 {
		avg = floorDiv(avg, load)
	}
	return r.minVruntime + avg
}

// sumsWith is avg_vruntime's sums (Σ (v − min_vruntime) × w and Σ w)
// over the queued entities and the running one, counted also when it is
// t itself on its way out: dequeue_entity tests and takes a blocking
// task's lag before it leaves the queue.
func (r *rq) sumsWith(t *simTask) (avg, load int64) {
	avg, load = r.avgVruntime, r.avgLoad
	if c := r.curr; c != nil && !c.rt && (c.state == tsRunning || c == t) {
		w := int64(c.weight)
		avg += (c.vruntime - r.minVruntime) * w
		load += w
	}
	return avg, load
}

// eligible is entity_eligible(): vruntime <= V, evaluated without the
// division.
func (r *rq) eligible(t *simTask) bool {
	avg, load := r.sumsWith(t)
	return avg >= (t.vruntime-r.minVruntime)*load
}

// baseSliceNS is sysctl_sched_base_slice: 0.75 ms × the tunable factor,
// 0.70 ms from v6.15 (Knobs.BaseSlice070).
func (s *Sim) baseSliceNS() int64 {
	if s.knobs.BaseSlice070 {
		return s.latencyNS / 6000000 * 700000
	}
	return s.latencyNS / 8
}

// finishDelayed is the final dequeue of a delayed task, picked by
// pick_eevdf (dequeue_entities with DEQUEUE_DELAYED): it leaves the tree
// and the load; its lag is taken now, and DELAY_ZERO clips a positive
// lag to 0. Also for a delayed task that dies.
func (s *Sim) finishDelayed(r *rq, t *simTask) {
	// dequeue_entity's update_load_avg, the task still on the queue.
	t.updateDelayedAvg(s.now, r.capacity)
	s.eevdfUpdateLag(r, t)
	if t.vlag > 0 {
		t.vlag = 0
	}
	r.treeRemove(t)
	t.delayed = false
	r.nrDelayed--
	r.loadWeight -= t.weight
	s.updateRQLoad(r)
	s.updateMinVruntime(r)
}

// requeueDelayed is the wakeup of a delayed task (ttwu_runnable ->
// requeue_delayed_entity): it is still queued on its CPU, so there is no
// select_task_rq and no migration. DELAY_ZERO: if its lag has become
// positive it is placed again at V with lag 0 (deadline one slice on),
// else it keeps its vruntime and deadline. Then wakeup_preempt.
func (s *Sim) requeueDelayed(t *simTask, waker *simTask, wakerCPU int) {
	r := s.cpus[t.cpu]
	src := wakerCPU
	if waker == nil {
		src = s.irqRaisedCPU(t, waker, s.arrivalCPU(t))
	}
	// try_to_wake_up traces sched_waking before ttwu_runnable, so the
	// waking comes before the sched_stat_runtime of the check below.
	if !s.wakingShown {
		s.emitWaking(t, waker, src, int(t.cpu))
	}
	// requeue_delayed_entity runs before any update_curr: the lag is
	// taken with the running task as last charged; its update_load_avg
	// ends the time the task was queued but not runnable.
	t.updateDelayedAvg(s.now, r.capacity)
	s.eevdfUpdateLag(r, t)
	if t.vlag > 0 {
		r.treeRemove(t)
		t.vlag = 0
		s.eevdfPlace(r, t, false)
		r.treeInsert(t)
	}
	t.delayed = false
	r.nrDelayed--
	r.nrCFS++
	s.stats.Delay.Requeued++
	// No enqueue: the wakeup check's own update_curr, t counted, in the
	// waking's context (ttwu_runnable uses no wakelist).
	s.enqCPU = r.cpu
	if waker == nil {
		s.enqFlags = int64(s.arrivalIRQ(t))
	}
	if src != r.cpu {
		s.enqOn = src
	}
	s.updateCurr(r)
	s.enqFlags, s.enqCPU, s.enqOn = 0, -1, -1
	r.enqResched = s.eevdfReschedCurr(r, r.nrCFS+r.nrDelayed)
	t.state = tsQueued
	t.utilEstEnq = t.utilEstOwn()
	r.utilEst += t.utilEstEnq
	s.updateTaskLoad(r, t)
	s.wakeupPreemptFrom(r, t, waker, wakerCPU, src)
}

func (t *simTask) vslice(ns int64) int64 { return ns * capacityScale / int64(t.weight) }

// eevdfPlace is place_entity() of v6.6: the entity keeps its lag, inflated
// so that V is unchanged by its arrival (PLACE_LAG), and gets a deadline
// one slice (half for a new task: PLACE_DEADLINE_INITIAL) ahead.
func (s *Sim) eevdfPlace(r *rq, t *simTask, initial bool) {
	v := r.avgVruntimeOf()
	lag := int64(0)
	load := r.avgLoad
	if c := r.currOnRQ(); c != nil {
		load += int64(c.weight)
	}
	if load > 0 {
		lag = t.vlag * (load + int64(t.weight)) / load
	}
	t.vruntime = v - lag
	if t.relDeadline {
		// PLACE_REL_DEADLINE: a moved task keeps the rest of its request.
		t.deadline += t.vruntime
		t.relDeadline = false
		return
	}
	vs := t.vslice(s.baseSliceNS())
	if initial {
		vs /= 2
	}
	t.deadline = t.vruntime + vs
}

// eevdfUpdateLag is update_entity_lag() at dequeue: vlag = V − vruntime,
// clamped to ± max(2 × slice, one tick) in the entity's virtual time, or
// (Knobs.LagClampMaxSlice) to ± the largest queued slice plus one tick,
// the slice with every task's the same.
func (s *Sim) eevdfUpdateLag(r *rq, t *simTask) {
	lim := 2 * s.baseSliceNS()
	if s.tickNS > lim {
		lim = s.tickNS
	}
	if s.knobs.LagClampMaxSlice {
		lim = s.baseSliceNS() + s.tickNS
	}
	lim = t.vslice(lim)
	// V with t still counted: on_rq is cleared only after the lag is taken.
	avg, load := r.sumsWith(t)
	v := r.minVruntime
	if load > 0 {
		v += floorDiv(avg, load)
	}
	lag := v - t.vruntime
	if lag > lim {
		lag = lim
	}
	if lag < -lim {
		lag = -lim
	}
	t.vlag = lag
}

// Slice protection (set_protect_slice, protect_slice): how long a task
// EEVDF has switched to keeps the CPU against wakeup preemption and against
// update_curr's reschedule while others are queued. The debugfs feature
// RUN_TO_PARITY chooses between the first two; the third is a what-if.
const (
	// SliceProtectDeadline is RUN_TO_PARITY (every EEVDF kernel's
	// default): protected until the deadline it was picked with (with
	// equal slices, as the model has, the shortest queued slice is its own).
	SliceProtectDeadline = "deadline"
	// SliceProtectBase is NO_RUN_TO_PARITY from v6.17: protected for
	// the normalized base slice (0.7 ms of its own virtual time, 0.75 ms
	// before v6.15) or to its deadline, whichever comes first.
	SliceProtectBase = "base"
	// SliceProtectNone: never protected. A wakee EEVDF would pick preempts
	// at once. Under the v6.6–v6.11 rule, where update_curr reschedules only
	// on a used-up request, this is those kernels' NO_RUN_TO_PARITY; under
	// v6.17's, update_curr reschedules whenever another task is queued, no
	// kernel's setting: the what-if of a scheduler without protection.
	SliceProtectNone = "none"
)

// SliceProtections are the values Config.SliceProtection accepts.
var SliceProtections = []string{SliceProtectDeadline, SliceProtectBase, SliceProtectNone}

// eevdfReschedCurr is the end of update_curr under EEVDF: whether the
// running task is rescheduled, nr being the entities queued on its
// cfs_rq at that point (itself and delayed ones included). Every EEVDF
// kernel reschedules on a request found used up (update_deadline: in this
// update, or in an earlier kernel update_curr this engine charges without
// evaluating the rule, rq.deadlineCrossed), with others queued; the
// crossing is consumed even with nobody else there.
// From v6.12 a task past its pick-time protection is also rescheduled
// once it is no longer eligible (ReschedIneligible), from v6.17 whenever
// it is past it (ReschedUnprotected). Sites: an enqueue (the wakee not
// yet counted), a delayed task's requeue, the balancer's dequeue (the
// task it pulls still counted: lbResched; the first of a pass only), a
// fork before v6.12 (the child not yet counted), the tick.
func (s *Sim) eevdfReschedCurr(r *rq, nr int) bool {
	crossed := r.deadlineCrossed
	r.deadlineCrossed = false
	curr := r.currOnRQ()
	if curr == nil || nr <= 1 {
		return false
	}
	if crossed {
		return true
	}
	if curr.protected() {
		return false
	}
	return s.knobs.ReschedUnprotected || s.knobs.ReschedIneligible && !r.eligible(curr)
}

// setProtectSlice is set_protect_slice at t's switch-in.
func (s *Sim) setProtectSlice(t *simTask) {
	switch s.protect {
	case SliceProtectNone:
		t.vprot = t.vruntime
	case SliceProtectBase:
		base := int64(750000)
		if s.knobs.BaseSlice070 {
			base = 700000
		}
		t.vprot = min(t.deadline, t.vruntime+t.vslice(base))
	default:
		t.vprot = t.deadline
	}
}

// protected is protect_slice(): t has not yet run to its vprot.
func (t *simTask) protected() bool { return t.vprot > t.vruntime }

// eevdfPick is pick_eevdf(): curr if it is eligible and still protected
// (protect_slice; by default RUN_TO_PARITY: not past the deadline it was
// picked with), else the eligible entity with the earliest deadline (ties:
// a queued entity before curr, then the one inserted first with
// DeadlineTree, else the smaller vruntime).
func (s *Sim) eevdfPick(r *rq) *simTask {
	curr := r.currOnRQ()
	if curr != nil && !r.eligible(curr) {
		curr = nil
	}
	if curr != nil && curr.protected() {
		return curr
	}
	var best *simTask
	for _, t := range r.tree {
		if r.eligible(t) && (best == nil || t.deadline < best.deadline ||
			s.knobs.DeadlineTree && t.deadline == best.deadline && t.treeSeq < best.treeSeq) {
			best = t
		}
	}
	// curr replaces the tree's choice only with a strictly earlier deadline.
	if curr != nil && (best == nil || curr.deadline < best.deadline) {
		best = curr
	}
	if best == nil {
		// Rounding can leave nobody eligible: take the smallest vruntime.
		if len(r.tree) > 0 {
			best = r.tree[0]
		} else {
			best = r.currOnRQ()
		}
	}
	return best
}
