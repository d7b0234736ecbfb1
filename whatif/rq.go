package whatif

// rq is struct rq with its cfs_rq (one level: no cgroups) and a FIFO of
// real-time tasks (SCHED_FIFO above CFS; per-CPU kthreads only).
type rq struct {
	cpu  int
	curr *simTask
	// tree holds the queued, not running, CFS tasks ordered by
	// (vruntime, enqueue order): the rb-tree's in-order walk.
	tree  []*simTask
	rtq   []*simTask
	nrCFS int // cfs.h_nr_runnable (incl. a running CFS curr)
	// nrDelayed: blocked CFS tasks still queued (EEVDF delayed dequeue,
	// v6.12+): counted in nr_running, load and avg_vruntime, not in
	// h_nr_runnable.
	nrDelayed   int
	loadWeight  uint64 // cfs_rq->load.weight
	minVruntime int64
	next, last  *simTask // CFS buddies
	// EEVDF: Σ (vruntime − min_vruntime) × weight and Σ weight over the
	// queued, not running, entities (avg_vruntime, avg_load).
	avgVruntime, avgLoad int64
	avg                  avg // cfs_rq PELT
	utilEst              uint64
	// misfitTaskLoad is rq->misfit_task_load: the task_h_load of the
	// running CFS task that does not fit this CPU (misfit.go), else 0.
	misfitTaskLoad uint64
	// hLoad is the root cfs_rq's h_load: its load_avg, taken at most once
	// per jiffy (update_cfs_rq_h_load; hLoadJiffy is that jiffy, noJiffy
	// before the first).
	hLoad      uint64
	hLoadJiffy int64
	// removed is cfs_rq->removed: the load, util and runnable averages
	// of tasks that left the CPU asleep (a wakeup migration) or dead,
	// taken off at its next PELT update, not when they left.
	removedLoad, removedUtil, removedRunnable uint64
	removedNr                                 int
	mruSeq                                    int64
	// treeSeq numbers insertions into tree (DeadlineTree's tie order).
	treeSeq int64
	// stopperShown: the stopper the output last switched to here
	// (preemptForStopper), to be switched out of at the next switch.
	stopperShown *simTask
	// capacity is the CPU's original capacity (capacity_orig_of: the rate
	// work progresses at); cpuCapacity is capacity_of(), what the fair
	// class sees: the original less the real-time class's running-time
	// average avgRT (rq->avg_rt), refreshed by the CPU's own load
	// balancing (update_cpu_capacity), not at every read.
	capacity    uint64
	cpuCapacity uint64
	avgRT       avg

	currStart int64 // exec_start of curr
	// switchCarry: the switch charge taken from the task leaving (its
	// run since its last update_curr), for the task switched in next.
	switchCarry int64
	gen         uint32
	waking      bool // idle exit in progress (still idle)
	idleGen     uint32
	// idleExitAt: when the idle exit in progress (waking) ends;
	// lateTickAt: when the idle vCPU takes the tick the host holds back
	// (0: none pending). The host runs the vCPU once for both: whichever
	// comes first brings the other (Sim.tick, kickIdle).
	idleExitAt, lateTickAt int64
	lateTickGen            uint32 // the pending late tick's event (gen)
	idleSince              int64

	// Balancing state.
	sd          []*sdState
	nextBalance int64 // jiffies
	idleStamp   int64
	avgIdle     int64
	// newILB: NOHZ_NEWILB_KICK, set by a newidle pass that pulled
	// nothing (nohz_newidle_balance), run when the CPU enters idle.
	newILB             bool
	maxIdleBalanceCost int64
	tickOn             bool
	idleTicks          int // the idle CPU's own ticks (nothing queued) since it went idle
	tickArmed          bool
	activeBalance      bool
	// inBalance: the CPU itself is in schedule() or its own softirq
	// balance, awake: work it pulls runs without an idle exit.
	inBalance bool
	// reschedPending is TIF_NEED_RESCHED of curr set by a wakeup
	// preemption whose switch is still to come (evResched); only
	// __schedule() clears it (clearResched), not the running task
	// reaching a milestone. reschedGen tells a stale evResched apart.
	reschedPending bool
	// tickSoftirq: the tick boundaries whose softirq will wake a
	// tick-softirq arrival on this CPU, with the last such waking's time
	// (Sim.holdTick): that tick's reschedule waits for it.
	tickSoftirq []tickSoftirq
	// timers: the tasks asleep on this CPU with an hrtimer arrival
	// pending that another timer's interrupt here may fire early
	// (timerslack.go), in the order they were armed.
	timers []int32
	// reschedOwn: the pending reschedule was raised by curr itself (a
	// wakeup it issued on this CPU, in a system call whose return to
	// user space switches).
	reschedOwn bool
	// reschedHostWait: the pending reschedule was sent from another CPU
	// and held for a host core (busyHostEnd): the vCPU is taken as
	// descheduled until reschedAt, so its task fires no wakeup before the
	// switch (fireDue).
	reschedHostWait bool
	reschedGen      uint32
	// reschedAt: when the pending reschedule switches (its evResched).
	reschedAt int64
	// tickDue: the tick (Sim.tick) set TIF_NEED_RESCHED for a switch at
	// its own instant, which waits for the tick's softirq (the periodic
	// balance) and comes after it; tickMaybe: EEVDF's flag was set but
	// the pick before the balance was curr again (a task the balance
	// pulls may yet win it).
	tickDue, tickMaybe bool
	// deadlineCrossed (EEVDF): curr's request was found used up and
	// renewed by an update_curr whose reschedule was not yet evaluated;
	// the next evaluation (eevdfReschedCurr) reschedules on it.
	deadlineCrossed bool
	// enqResched (EEVDF): the update_curr of the enqueue just made asks
	// for a reschedule; the wakeup-preemption check that follows acts on
	// it.
	enqResched bool
	// stalls are the vCPU's host stalls left on the CPU
	// (Config.HostStallCPU; hoststall_cpu.go), stallIdx the first not
	// over before the running task's last charge. Last: the hot fields
	// above keep their cache lines.
	stalls   []stallSpan
	stallIdx int
}

func (s *Sim) newRQ(c int) *rq {
	r := &rq{cpu: c, capacity: capacityScale, avgIdle: 2 * s.cfg.MigrationCostNS, maxIdleBalanceCost: s.cfg.MigrationCostNS, hLoadJiffy: noJiffy}
	if c < len(s.dom.CPUs) {
		for _, sd := range s.dom.CPUs[c].Domains {
			r.sd = append(r.sd, &sdState{sd: sd, balanceInterval: int64(sd.BalanceInterval), groups: sd.Groups(), niCall: 512, niSuccess: s.niStart / 2, niRatio: s.niStart})
		}
	}
	if s.cfg.Topology != nil || s.w.Topology != nil {
		topo := s.cfg.Topology
		if topo == nil {
			topo = s.w.Topology
		}
		if c < len(topo.CPUs) && topo.CPUs[c].Capacity > 0 {
			r.capacity = uint64(topo.CPUs[c].Capacity)
		}
	}
	r.cpuCapacity = r.capacity
	return r
}

// nrRunning is rq->nr_running (all classes, running included).
func (r *rq) nrRunning() int {
	return r.nrCFS + r.nrDelayed + len(r.rtq) + b2i(r.curr != nil && r.curr.rt)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// idle is idle_cpu(): running the idle task with nothing queued.
func (r *rq) idle() bool { return r.curr == nil && r.nrRunning() == 0 }

// Enqueue flags.
const (
	enqWakeup = iota
	enqNew
	enqMigrated // load-balance attach
	enqStart
)

// updateCurr is update_curr(): charge the running task for the time since
// it was last charged (sum_exec_runtime, vruntime, demand progress) and
// advance min_vruntime. Like the kernel's it writes the sched_stat_runtime
// of the time charged since the last one, so the output shows every update
// (the tick's request renewals among them) where a trace would.
// Its record carries the interrupt context of a wakeup's enqueue
// (Sim.enqFlags), no flags otherwise.
func (s *Sim) updateCurr(r *rq) {
	s.chargeCurr(r, true)
	// The real-time class's update_curr_rt runs at its own tick and
	// switch-out, not at CFS's enqueues and wakeup checks.
	if t := r.curr; t != nil && !t.rt {
		switch {
		case r.cpu == s.enqCPU:
			s.emitStatRuntimeOn(r, t, s.enqFlags, s.enqOn, nil)
		case s.lb.cpu >= 0 && s.lb.cpu != r.cpu:
			// A balance run on another CPU updates this one's task
			// (detach_tasks from the busiest queue; an active balance's
			// attach from the stopper on the source): written where
			// the balance runs, as its sched_migrate_task is.
			s.emitStatRuntimeOn(r, t, 0, s.lb.cpu, s.lb.cur)
		default:
			s.emitStatRuntime(r, t, 0)
		}
	}
}

// tickUpdateCurr is the tick's update_curr (any class's): its
// sched_stat_runtime is written in hard-IRQ context, as the kernel's is
// (workload extraction reads ticks from that flag).
func (s *Sim) tickUpdateCurr(r *rq) {
	s.chargeCurr(r, true)
	if t := r.curr; t != nil {
		s.emitStatRuntime(r, t, flagHardIRQ)
	}
}

// chargeCurr charges the running task; kernel says the kernel runs
// update_curr here too. Where only this engine charges (a task reaching a
// milestone of its own: its demand's progress, a wakeup it sends to
// another CPU), the kernel's vruntime does not move: the time waits in
// vrunPending for the kernel's next update_curr, which turns it into
// vruntime in one step (as the kernel's delta since its last update),
// renews a used-up EEVDF request and moves min_vruntime. V, eligibility
// and placements in between see the running task as the kernel does.
func (s *Sim) chargeCurr(r *rq, kernel bool) {
	t := r.curr
	if t == nil {
		return
	}
	dt := s.now - r.currStart
	if dt <= 0 {
		// A milestone charged it at this instant: the kernel's update
		// here takes what it left.
		if kernel {
			s.kernelUpdateCurr(r, t)
		}
		return
	}
	if int(t.cpu) != r.cpu || t.state != tsRunning {
		s.fail("task %d charged on cpu %d but is on cpu %d state %d", t.w.TID, r.cpu, t.cpu, t.state)
	}
	work := dt
	if r.stalls != nil {
		work = r.workIn(r.currStart, s.now)
	}
	r.currStart = s.now
	t.execStart = s.now
	t.charged += dt
	t.sumExec += dt
	inc := work * int64(r.capacity) / capacityScale
	a := &t.w.Activations[t.act]
	if t.progress+inc > a.DemandNS {
		inc = a.DemandNS - t.progress
	}
	t.progress += inc
	t.runTime += inc
	if !t.rt {
		t.vrunPending += dt
		if kernel {
			s.kernelUpdateCurr(r, t)
		}
	}
}

// kernelUpdateCurr is what update_curr does to the running CFS task's
// vruntime: the time run since its last update, weighted, then the
// request's renewal and min_vruntime.
func (s *Sim) kernelUpdateCurr(r *rq, t *simTask) {
	if t.rt {
		return
	}
	if t.vrunPending > 0 {
		t.vruntime += t.vrunPending * capacityScale / int64(t.weight)
		t.vrunPending = 0
		s.renewDeadline(r, t)
		s.updateMinVruntime(r)
		return
	}
	s.renewDeadline(r, t)
}

// renewDeadline is update_deadline (EEVDF): a request used up is
// followed by a new one. vprot is at most the old deadline, so the
// protection is over.
func (s *Sim) renewDeadline(r *rq, t *simTask) {
	if s.eevdf && !t.rt && t.vruntime >= t.deadline {
		t.deadline = t.vruntime + t.vslice(s.baseSliceNS())
		r.deadlineCrossed = true
	}
}

func (s *Sim) updateMinVruntime(r *rq) {
	v := r.minVruntime
	cur := r.currOnRQ() != nil
	if cur {
		v = r.curr.vruntime
	}
	if len(r.tree) > 0 {
		l := r.tree[0].vruntime
		if !cur || l < v {
			v = l
		}
	}
	if v > r.minVruntime {
		// avg_vruntime_update: the sums are relative to min_vruntime.
		r.avgVruntime -= r.avgLoad * (v - r.minVruntime)
		r.minVruntime = v
	}
}

// updateRQLoad is update_cfs_rq_load_avg on the cfs_rq's own inputs.
func (s *Sim) updateRQLoad(r *rq) {
	if r.removedNr > 0 {
		r.avg.takeRemoved(r.removedLoad, r.removedUtil, r.removedRunnable)
		r.removedLoad, r.removedUtil, r.removedRunnable, r.removedNr = 0, 0, 0, 0
	}
	running := r.curr != nil && !r.curr.rt
	r.avg.update(s.now, r.loadWeight, uint64(r.nrCFS), running, 1, r.capacity)
	s.updateRT(r)
}

// removeLoad is remove_entity_load_avg(): t, off r's queue, is brought up
// to r's last PELT update (sync_entity_load_avg; a wakeup migration from
// an idle CPU estimates the time since then too, migrate_se_pelt_lag,
// which lag then passes for now) and its averages are queued to leave r
// at r's next update.
func (s *Sim) removeLoad(r *rq, t *simTask, lag bool) {
	to := r.avg.lastUpdate
	if lag && r.curr == nil {
		to = s.now
	}
	if to > t.avg.lastUpdate {
		t.updateAvg(to, 0, false)
	}
	r.removedNr++
	r.removedLoad += t.avg.loadAvg
	r.removedUtil += t.avg.utilAvg
	r.removedRunnable += t.avg.runnableAvg
}

// updateRT is update_rt_rq_load_avg(): the real-time class's running-time
// average on r, advanced with its input since the last update (an RT task
// running or not). Call it before r.curr changes.
func (s *Sim) updateRT(r *rq) {
	if r.avgRT.lastUpdate == 0 {
		r.avgRT.lastUpdate = s.now
	}
	var b uint64
	if r.curr != nil && r.curr.rt && !r.curr.stop {
		b = 1
	}
	r.avgRT.update(s.now, b, b, b == 1, 1, r.capacity)
}

// updateCPUCapacity is update_cpu_capacity() with scale_rt_capacity():
// capacity_of(cpu) becomes the original capacity less the RT average's
// util (the model has no IRQ time or deadline tasks), at least 1.
func (s *Sim) updateCPUCapacity(r *rq) {
	s.updateRT(r)
	if used := r.avgRT.utilAvg; used < r.capacity {
		r.cpuCapacity = r.capacity - used
	} else {
		r.cpuCapacity = 1
	}
}

// checkCPUCapacity is check_cpu_capacity(): r's capacity for the fair
// class is noticeably (more than the domain's imbalance_pct) reduced by
// other classes.
func checkCPUCapacity(r *rq, imbalancePct uint64) bool {
	return r.cpuCapacity*imbalancePct < r.capacity*100
}

// updateTaskLoad is update_load_avg() of a CFS entity on its cfs_rq.
func (s *Sim) updateTaskLoad(r *rq, t *simTask) {
	if t.rt {
		return
	}
	switch {
	case t.delayed:
		t.updateDelayedAvg(s.now, r.capacity)
	case t.state == tsQueued || t.state == tsRunning:
		t.updateAvgOn(s.now, 1, r.curr == t, r.capacity)
	default:
		t.updateAvgOn(s.now, 0, r.curr == t, r.capacity)
	}
	s.updateRQLoad(r)
}

// updateDelayedAvg is __update_load_avg_se() for a task DELAY_DEQUEUE
// keeps queued: on_rq, so its load grows, but not runnable (se_runnable
// is false for sched_delayed) and not running.
func (t *simTask) updateDelayedAvg(now int64, scale uint64) {
	if t.avg.update(now, 1, 0, false, t.weight, scale) {
		t.ueUnchanged = false
	}
}

// updateAvg is __update_load_avg_se() for a task: its sums to now with
// load and runnable l (0 or 1) and running; averages that changed clear
// UTIL_AVG_UNCHANGED (cfs_se_util_change).
func (t *simTask) updateAvg(now int64, l uint64, running bool) {
	t.updateAvgOn(now, l, running, capacityScale)
}

// updateAvgOn is updateAvg for a task that may have been running on a
// CPU of original capacity scale (avg.update).
func (t *simTask) updateAvgOn(now int64, l uint64, running bool, scale uint64) {
	if t.avg.update(now, l, l, running, t.weight, scale) {
		t.ueUnchanged = false
	}
}

// taskHLoad is task_h_load() with CONFIG_FAIR_GROUP_SCHED (Debian's
// kernels) and every task in the root group: the task's load_avg scaled by
// its CPU's h_load, the cfs_rq's load_avg as first read in this jiffy,
// over the cfs_rq's load_avg now + 1. So it is one less than load_avg
// at best, and a second task detached from a CPU within a jiffy weighs
// more than its load_avg (the first one's load has left the cfs_rq, not
// the cached h_load).
// noJiffy is no jiffy at all (the least int64): what a per-jiffy cache
// holds before its first use.
const noJiffy = -1 << 63

func (s *Sim) taskHLoad(p *simTask) uint64 {
	r := s.cpus[p.cpu]
	if j := s.jiffies(); r.hLoadJiffy != j {
		r.hLoad, r.hLoadJiffy = r.avg.loadAvg, j
	}
	return p.avg.loadAvg * r.hLoad / (r.avg.loadAvg + 1)
}

// utilEstOwn is _task_util_est(): max(ewma, enqueued), what enqueue adds
// to and dequeue takes from the cfs_rq's util_est.
func (t *simTask) utilEstOwn() uint64 { return max(t.ueEwma, t.ueEnqueued) }

// utilEstValue is task_util_est(): the larger of util_avg and the
// estimate.
func (t *simTask) utilEstValue() uint64 { return max(t.avg.utilAvg, t.utilEstOwn()) }

// utilEstMargin is UTIL_EST_MARGIN (1 % of the capacity scale).
const utilEstMargin = capacityScale / 100

// withinMargin is within_margin(): |v| < margin.
func withinMargin(v int64) bool { return v > -utilEstMargin && v < utilEstMargin }

// utilEstUpdate is util_est_update() at a task's sleep (UTIL_EST_FASTUP
// on; capOrig the CPU's original capacity). No sample when the task's util
// has not changed since the last one (UTIL_AVG_UNCHANGED). v6.1: a rise
// resets the EWMA; a util within 1 % of the EWMA leaves it (and the last
// sample too, unless that moved by 1 % or more); a util above the capacity
// takes no sample; otherwise the EWMA moves a quarter of the way down.
// Knobs.UtilEstRunnableSkip (6.6.y) records the sample without moving the
// EWMA when the task was runnable more than 1 % longer than it ran;
// Knobs.UtilEstSingle (v6.9, 11137d384996) keeps only the EWMA, which
// also takes the sample's value when equal and is left (the flag set) by a
// change under 1 %.
func (s *Sim) utilEstUpdate(t *simTask, capOrig uint64) {
	if t.ueUnchanged {
		return
	}
	util := t.avg.utilAvg
	if s.knobs.UtilEstSingle {
		t.ueEnqueued = 0
		if t.ueEwma > util {
			diff := t.ueEwma - util
			switch {
			case diff < utilEstMargin:
			case util > capOrig:
				return
			case util+utilEstMargin < t.avg.runnableAvg:
			default:
				t.ueEwma = (t.ueEwma<<2 - diff) >> 2
			}
		} else {
			t.ueEwma = util
		}
		t.ueUnchanged = true
		return
	}
	lastEnq := int64(t.ueEnqueued)
	if t.ueEwma < util {
		t.ueEnqueued, t.ueEwma, t.ueUnchanged = util, util, true
		return
	}
	ewmaDiff := int64(util) - int64(t.ueEwma)
	if withinMargin(ewmaDiff) {
		if !withinMargin(lastEnq - int64(util)) {
			t.ueEnqueued, t.ueUnchanged = util, true
		}
		return
	}
	if util > capOrig {
		return
	}
	if !(s.knobs.UtilEstRunnableSkip && util+utilEstMargin < t.avg.runnableAvg) {
		// ewma = (ewma << 2 + diff) >> 2 with diff < 0.
		t.ueEwma = uint64((int64(t.ueEwma)<<2 + ewmaDiff) >> 2)
	}
	t.ueEnqueued, t.ueUnchanged = util, true
}

// treeInsert keeps tree ordered by vruntime (ties: after equal keys, as
// the rb-tree inserts to the right).
func (r *rq) treeInsert(t *simTask) {
	i := len(r.tree)
	for i > 0 && r.tree[i-1].vruntime > t.vruntime {
		i--
	}
	r.tree = append(r.tree, nil)
	copy(r.tree[i+1:], r.tree[i:])
	r.tree[i] = t
	r.treeSeq++
	t.treeSeq = r.treeSeq
	r.avgAdd(t)
}

func (r *rq) treeRemove(t *simTask) {
	for i, x := range r.tree {
		if x == t {
			r.avgSub(t)
			r.tree = append(r.tree[:i], r.tree[i+1:]...)
			return
		}
	}
}

// schedPeriod and schedSlice are __sched_period and sched_slice (CFS;
// ALT_PERIOD's rq-wide h_nr_running is the cfs_rq's nr_running without
// task groups).
func (s *Sim) schedPeriod(n int) int64 {
	if n > 8 {
		return int64(n) * s.minGranNS
	}
	return s.latencyNS
}

func (s *Sim) schedSlice(r *rq, t *simTask, onRQ bool) int64 {
	n := r.nrCFS
	w := r.loadWeight
	if !onRQ {
		n++
		w += t.weight
	}
	slice := s.schedPeriod(n)
	if w != 0 {
		slice = slice * int64(t.weight) / int64(w)
	}
	// BASE_SLICE (v5.13+, on in the fixtures' sched features): at least
	// sysctl_sched_min_granularity (no SCHED_IDLE entities, so never the
	// idle minimum). The older policies' kernels had no such floor.
	if s.knobs.BaseSlice && slice < s.minGranNS {
		slice = s.minGranNS
	}
	return slice
}

// enqueue is enqueue_task_fair (enqueue_entity, place_entity) or the RT
// enqueue.
func (s *Sim) enqueue(r *rq, t *simTask, flag int) {
	t.cpu = int32(r.cpu)
	if t.rt {
		t.state = tsQueued
		r.rtq = append(r.rtq, t)
		// add_nr_running counts every class: an RT task queued
		// beside a CFS one overloads the root domain too.
		if r.nrRunning() >= 2 {
			s.rdOverload = true
		}
		return
	}
	s.updateCurr(r)
	if s.eevdf && flag != enqStart && !s.noClock {
		// enqueue_entity's update_curr runs before t is counted.
		r.enqResched = s.eevdfReschedCurr(r, r.nrCFS+r.nrDelayed)
	}
	s.updateRQLoad(r)
	if s.eevdf {
		if flag != enqWakeup {
			r.avg.attach(&t.avg, t.weight)
		} else {
			t.updateAvg(s.now, 0, false)
		}
		s.eevdfPlace(r, t, flag == enqNew && s.knobs.ForkHalfDeadline || flag == enqStart)
	}
	switch {
	case s.eevdf:
	case flag == enqWakeup:
		// Sleeper credit: at most half a latency period behind
		// min_vruntime (GENTLE_FAIR_SLEEPERS).
		v := r.minVruntime - s.latencyNS/2
		if t.vruntime < v {
			t.vruntime = v
		}
		t.updateAvg(s.now, 0, false)
	case flag == enqNew, flag == enqMigrated:
		// A new task was placed relative to the forking CPU's queue
		// (START_DEBIT, in fork); like a migrated one it only takes
		// this queue's min_vruntime.
		t.vruntime += r.minVruntime
		r.avg.attach(&t.avg, t.weight)
	case flag == enqStart:
		t.vruntime = r.minVruntime
		r.avg.attach(&t.avg, t.weight)
	}
	if t.delayed {
		// A delayed task the balancer moved (enqMigrated) is delayed here
		// too: in the tree and the load, not runnable, no util_est.
		r.nrDelayed++
	} else {
		t.state = tsQueued
		r.nrCFS++
		t.utilEstEnq = t.utilEstOwn()
		r.utilEst += t.utilEstEnq
	}
	r.loadWeight += t.weight
	r.treeInsert(t)
	r.toHead(t)
	s.updateTaskLoad(r, t)
	if r.nrRunning() >= 2 {
		s.rdOverload = true
	}
	s.updateOverutilizedStatus(r.cpu)
}

// toHead moves t to the head of r's cfs_tasks list, which the balancer
// scans from the tail: an enqueue puts a task there
// (account_entity_enqueue's list_add), and so do a pick (the MRU move in
// pick_next_task_fair) and detach_tasks passing over a task it may not
// take (the list_move at its "next" label).
func (r *rq) toHead(t *simTask) {
	r.mruSeq++
	t.mru = r.mruSeq
}

// dequeue is dequeue_task_fair; sleep applies util_est's update
// (util_est_update) as the task blocks.
func (s *Sim) dequeue(r *rq, t *simTask, sleep bool) {
	if t.rt {
		for i, x := range r.rtq {
			if x == t {
				r.rtq = append(r.rtq[:i], r.rtq[i+1:]...)
				break
			}
		}
		return
	}
	s.updateCurr(r)
	// dequeue_entity's update_load_avg runs while the task is still on
	// the queue (and still current if it was running): the time since
	// its last update was runnable, whatever state its caller has
	// already given it.
	t.updateAvgOn(s.now, 1, r.curr == t, r.capacity)
	s.updateRQLoad(r)
	mayDelay := s.eevdf && s.knobs.DelayDequeue && sleep && t.state == tsSleeping
	delay := mayDelay && !r.eligible(t)
	if mayDelay && r.nrCFS+len(r.rtq) > 1 {
		// A block with another runnable task to switch to, as the blocks
		// DelayedDequeues counts in a trace (one to idle dequeues every
		// delayed task at its pick).
		s.stats.Delay.Blocks++
		if delay {
			s.stats.Delay.Delayed++
		}
	}
	if s.eevdf && !delay {
		s.eevdfUpdateLag(r, t)
	}
	if delay {
		// DELAY_DEQUEUE: it stays in the tree (put back by schedule()
		// if it was running) with its vruntime and deadline, counted in
		// load and V but no longer runnable.
		t.delayed = true
		r.nrDelayed++
	} else if r.curr != t {
		r.treeRemove(t)
	}
	if r.next == t {
		r.next = nil
	}
	if r.last == t {
		r.last = nil
	}
	r.nrCFS--
	if !t.delayed {
		r.loadWeight -= t.weight
	}
	if r.utilEst >= t.utilEstEnq {
		r.utilEst -= t.utilEstEnq
	} else {
		r.utilEst = 0
	}
	if sleep {
		s.utilEstUpdate(t, r.capacity)
	}
	s.updateRQLoad(r)
	if !t.delayed {
		s.updateMinVruntime(r)
	}
}

// migrateSleeping moves a sleeping task's signals and vruntime from src to
// dst (migrate_task_rq_fair: vruntime made relative to src's min_vruntime;
// PELT removed from src; attached at the enqueue on dst).
func (s *Sim) migrateSleeping(t *simTask, src, dst *rq) {
	if t.rt {
		return
	}
	s.removeLoad(src, t, true)
	if !s.eevdf {
		t.vruntime -= src.minVruntime
		t.vruntime += dst.minVruntime
	}
	dst.avg.update(s.now, dst.loadWeight, uint64(dst.nrCFS), dst.curr != nil && !dst.curr.rt, 1, dst.capacity)
	dst.avg.attach(&t.avg, t.weight)
	t.execStart = -1
}

// armProgress schedules the running task's next milestone: its next edge
// or the end of its demand.
func (s *Sim) armProgress(r *rq) {
	t := r.curr
	r.gen++
	if t == nil {
		return
	}
	a := &t.w.Activations[t.act]
	m := a.DemandNS
	if t.nextEdge < a.EdgeHi {
		if o := s.w.Edges[t.nextEdge].OffsetNS; o < m {
			m = o
		}
	}
	if t.awaitOn != nil && t.awaitAt < m {
		m = t.awaitAt
	}
	for _, h := range t.heldWakes {
		// Reach the end of the stall a held wakeup waits for.
		if h.at < m && h.at >= t.progress {
			m = h.at
		}
	}
	if t.weighStall < a.StallHi && s.stallContentionOn() {
		// Reach the stall's start: weighStalls weighs it there.
		if o := s.w.HostStalls[t.weighStall].OffsetNS; o < m && o >= t.progress {
			m = o
		}
	}
	rem := m - t.progress
	if rem < 0 {
		rem = 0
	}
	dt := (rem*capacityScale + int64(r.capacity) - 1) / int64(r.capacity)
	at := s.now + dt
	if r.stalls != nil {
		at = r.timeForWork(s.now, dt)
	}
	s.push(event{t: at, kind: evProgress, cpu: int32(r.cpu), gen: r.gen})
}

// pickNext is pick_next_task: RT first, then pick_next_entity (leftmost,
// or the last/next buddy when not more than a wakeup granularity ahead).
func (s *Sim) pickNext(r *rq) *simTask {
	if len(r.rtq) > 0 {
		return r.rtq[0]
	}
	if len(r.tree) == 0 {
		return nil
	}
	if s.eevdf {
		return s.pickEEVDF(r)
	}
	left := r.tree[0]
	se := left
	if r.last != nil && r.last.state == tsQueued && s.wakeupPreemptEntity(r.last, left) < 1 {
		se = r.last
	}
	if r.next != nil && r.next.state == tsQueued && s.wakeupPreemptEntity(r.next, left) < 1 {
		se = r.next
	}
	if se == r.next {
		r.next = nil
	}
	if se == r.last {
		r.last = nil
	}
	return se
}

// pickEEVDF is pick_next_entity under EEVDF: a delayed task picked is
// dequeued for good, and the pick starts again.
func (s *Sim) pickEEVDF(r *rq) *simTask {
	for len(r.tree) > 0 || r.currOnRQ() != nil {
		se := s.eevdfPick(r)
		if se == nil || !se.delayed {
			return se
		}
		s.finishDelayed(r, se)
	}
	return nil
}

// wakeupPreemptEntity is wakeup_preempt_entity(curr, se): 1 if curr is
// more than se's wakeup granularity ahead, -1 if not ahead at all.
func (s *Sim) wakeupPreemptEntity(curr, se *simTask) int {
	vdiff := curr.vruntime - se.vruntime
	if vdiff <= 0 {
		return -1
	}
	gran := s.wakeupGranNS * capacityScale / int64(se.weight)
	if vdiff > gran {
		return 1
	}
	return 0
}

// schedule is __schedule(): put the previous task back (if still
// runnable), pick the next, newly-idle balance when there is none, and
// switch. prevState is the sched_switch prev_state of a task leaving the
// CPU ("" when the previous task stays runnable: "R", a preemption at the return to user space, as 6.1 prints it).
func (s *Sim) schedule(r *rq, prevState string) {
	prev := r.curr
	s.clearResched(r)
	var eevdfNext *simTask
	if prev != nil {
		if prev.state == tsRunning {
			// A preemption: a block took its charge before its dequeue.
			s.takeSwitchCharge(r, prev, false, 0)
		}
		s.updateCurr(r)
		// A reschedule asked for here is cleared with this one.
		r.deadlineCrossed = false
		if prev.state == tsRunning {
			s.updateTaskLoad(r, prev)
			if s.eevdf && !prev.rt && len(r.rtq) == 0 {
				// pick_next_task_fair picks before put_prev_entity: prev
				// is still cfs_rq->curr, kept while it is eligible and
				// protected, losing ties to a queued entity.
				eevdfNext = s.pickEEVDF(r)
			}
			// put_prev_entity: back into the tree.
			prev.state = tsQueued
			if prev.rt {
				r.rtq = append([]*simTask{prev}, r.rtq...)
			} else {
				r.treeInsert(prev)
			}
		} else if prev.delayed {
			// Blocked but still queued (delayed dequeue).
			r.treeInsert(prev)
		}
	}
	buddyNext, buddyLast := r.next, r.last
	next := eevdfNext
	if next == nil {
		next = s.pickNext(r)
	}
	if next == nil {
		if prev != nil {
			// The kernel's update_curr at the dequeue writes the
			// leaving task's sched_stat_runtime before newidle
			// balancing, so a pull's sched_migrate_task follows it (as
			// the trace's do: newidleTally tells them from placements
			// by it).
			s.emitStatRuntime(r, prev, 0)
		}
		s.updateRT(r)
		r.curr = nil
		r.inBalance = true
		s.updateMisfitStatus(r, nil)
		was := s.balancingOn(r.cpu, prev)
		s.newidleBalance(r)
		s.endBalancing(was)
		r.inBalance = false
		next = s.pickNext(r)
	}
	if next == nil {
		r.switchCarry = 0
		s.updateRT(r)
		r.curr = nil
		r.gen++
		if prev != nil {
			s.emitSwitch(r, prev, nil, prevState)
		}
		s.enterIdle(r)
		return
	}
	if !next.rt {
		s.updateMisfitStatus(r, next) // pick_next_task_fair
	}
	if prev != next {
		r.curr = prev
		s.switchTo(r, next, prevState)
	} else {
		// Picked again: the run it was not charged is its own still.
		prev.vrunPending += r.switchCarry
		prev.sumExec += r.switchCarry
		r.switchCarry = 0
		// Same task again: take it out of the queue (it stays at the
		// head of cfs_tasks: pick_next_task_fair's MRU move).
		sum := next.prevSumExec
		s.takeCurr(r, next)
		r.toHead(next)
		if !s.eevdf && !next.rt {
			// With CONFIG_FAIR_GROUP_SCHED (Debian's kernels) the fair
			// class's pick calls set_next_entity only for another task:
			// picked again, the task's slice goes on
			// (prev_sum_exec_runtime kept, so the next tick reschedules it
			// again) and no buddy is cleared.
			next.prevSumExec = sum
			r.next, r.last = buddyNext, buddyLast
		}
		s.armProgress(r)
	}
}

func (s *Sim) takeCurr(r *rq, t *simTask) {
	if t.rt {
		for i, x := range r.rtq {
			if x == t {
				r.rtq = append(r.rtq[:i], r.rtq[i+1:]...)
				break
			}
		}
	} else {
		r.treeRemove(t)
	}
	t.state = tsRunning
	s.updateRT(r)
	r.curr = t
	r.currStart = s.now
	r.deadlineCrossed = false
	t.prevSumExec = t.sumExec
}

// switchTo makes t current on r (set_next_entity), emitting sched_switch.
func (s *Sim) switchTo(r *rq, t *simTask, prevState string) {
	prev := r.curr
	wasIdle := prev == nil
	if prev == t {
		return
	}
	if prev != nil && prev.state == tsRunning {
		s.fail("switchTo: previous task %d still running", prev.w.TID)
	}
	// set_next_entity updates the task's load before it becomes current:
	// its wait in the queue was runnable, not running.
	s.updateTaskLoad(r, t)
	s.takeCurr(r, t)
	if s.eevdf {
		s.setProtectSlice(t)
	}
	r.toHead(t)
	t.execStart = s.now
	t.statExec = t.sumExec
	if c := r.switchCarry; c > 0 {
		// The switch's run since the leaving task's last update is this
		// task's first charge (switchcharge.go).
		r.switchCarry = 0
		if !t.rt {
			t.vrunPending += c
			t.sumExec += c
		}
	}
	t.ranOn = true
	s.noteCPU(r, false)
	if wasIdle && s.cfg.IdleTicks > 0 {
		if d := s.now - r.idleSince; d >= IdleMidMinNS && d < IdleMidMaxNS {
			s.stats.IdleMidPeriods++
			if r.idleTicks > 0 {
				s.stats.IdleMidTicked++
			}
		}
	}
	if wasIdle {
		s.emitSwitch(r, nil, t, "")
	} else {
		s.emitSwitch(r, prev, t, prevState)
	}
	if wasIdle {
		s.startTick(r)
	}
	s.armProgress(r)
}

// wakeupPreempt is check_preempt_curr after an enqueue: an idle CPU is
// kicked (after the idle-exit delay), a running CFS task is preempted by
// an RT task, or by a CFS wakee more than wakeup_gran behind it
// (check_preempt_wakeup, which also marks the wakee as next buddy).
func (s *Sim) wakeupPreempt(r *rq, t *simTask) {
	enqResched := r.enqResched
	r.enqResched = false
	if r.curr == nil {
		s.kickIdle(r)
		return
	}
	curr := r.curr
	if curr == t {
		return
	}
	if t.rt {
		if !curr.rt {
			s.reschedRT(r)
		}
		return
	}
	if curr.rt {
		return
	}
	if r.reschedPending {
		// check_preempt_wakeup returns early when curr already has
		// TIF_NEED_RESCHED: no second reschedule, no buddy change.
		return
	}
	s.updateCurr(r)
	if s.eevdf {
		// check_preempt_wakeup_fair. First the enqueue's update_curr may
		// have asked for a reschedule (eevdfReschedCurr).
		if enqResched {
			s.reschedLater(r)
			return
		}
		if t.delayed && s.knobs.ForkNoPreempt {
			// A delayed task the balancer moved never preempts: 6.18.y
			// returns for sched_delayed with the WF_FORK test.
			return
		}
		if s.forking && s.knobs.ForkNoPreempt {
			// e837456fdca8: a fork (WF_FORK) never preempts.
			return
		}
		// Then preempt iff the wakee is what EEVDF would pick now. From
		// ac8e69e69363 the check is pick_next_entity's: a delayed task
		// it picks is dequeued for good and the pick is made again.
		for {
			p := s.eevdfPick(r)
			if p == t {
				s.reschedLater(r)
				return
			}
			if p == nil || !p.delayed || !s.knobs.WakeupPickDelayed {
				return
			}
			s.finishDelayed(r, p)
		}
	}
	if s.wakeupPreemptEntity(curr, t) == 1 {
		r.next = t
		if r.nrCFS >= 8 {
			r.last = curr
		}
		s.reschedLater(r)
	}
}

func (s *Sim) preempt(r *rq) { s.schedule(r, "R") }

// clearResched is __schedule()'s clear_tsk_need_resched(prev): a pending
// wakeup-preemption reschedule is consumed by this pass through the
// scheduler, whatever it picks.
func (s *Sim) clearResched(r *rq) {
	r.reschedPending = false
	r.reschedGen++
}

// reschedLater is resched_curr() for a wakeup preemption: the switch
// happens after a delay drawn from the trace's own wakeup-to-preemption
// delays (IPI, return to user space), or at once without them, and not
// before the running task's next preemption point (preemptionPoint). Until
// then TIF_NEED_RESCHED is pending (rq.reschedPending).
func (s *Sim) reschedLater(r *rq) {
	s.reschedAfter(r, s.reschedDelays(r.cpu+1 == s.wakerCPU1, r.cpu+1 == s.irqCPU1))
}

// reschedAfter is reschedLater with the delay drawn from pool.
func (s *Sim) reschedAfter(r *rq, pool []int64) {
	d := int64(0)
	local := r.cpu+1 == s.wakerCPU1
	if s.cfg.IdleWake && len(pool) > 0 && !(local && s.inOwnRunOn(r)) {
		d = pool[s.rand()%uint64(len(pool))]
	}
	// A stalled vCPU takes the IPI or reaches its return to user when the
	// host runs it again: the switch waits out a host stall of the running
	// task's demand (hoststall.go). A wakeup raised by an interrupt on r's
	// own CPU came from a running vCPU, whose task's demand at this point
	// is not where the trace had it stall; it may still be descheduled
	// before the switch (irqWakeStallEnd).
	// An IPI from another running vCPU outside such a stall may find
	// this one descheduled all the same (busyHostEnd).
	var at, hold int64
	if !local && r.cpu+1 == s.irqCPU1 {
		at = s.irqWakeStallEnd(s.preemptionPoint(r, s.now+d))
	} else {
		at = s.hostStallEnd(r, s.now+d)
		if !local && at == s.now+d {
			if e := s.busyHostEnd(r.cpu, s.now); e > at {
				at, hold = e, e-at
			}
		}
		at = s.preemptionPoint(r, at)
	}
	pending := r.reschedPending
	s.reschedAtPoint(r, at, local)
	if hold > 0 && !pending && r.reschedPending {
		r.reschedHostWait = true
		s.stats.BusyHostWaits++
		s.stats.BusyHostWaitNS += hold
	}
}

// reschedAtPoint switches r's running task at `at`: at once if that is
// now, else TIF_NEED_RESCHED stays pending (own: raised by the task's own
// wakeup) until its evResched, unless one already is.
func (s *Sim) reschedAtPoint(r *rq, at int64, own bool) {
	if at <= s.now && !s.atRunOnEnd(r) {
		s.preempt(r)
		return
	}
	if r.reschedPending {
		return
	}
	r.reschedPending = true
	r.reschedOwn = own
	r.reschedHostWait = false
	r.reschedAt = at
	if at <= s.now {
		// Asked for at the end of a run-on that is its activation's (a
		// wakeup the last thing before the block or exit).
		s.reschedBehindRunOnEnd(r)
		return
	}
	s.push(event{t: at, kind: evResched, cpu: int32(r.cpu), gen: r.reschedGen})
}

// reschedBehindRunOnEnd queues r's reschedule, due now at the end of a
// run-on that is its activation's (atRunOnEnd), behind that end: the
// block's or exit's switch, coming next at this same instant, takes it
// (and bumps reschedGen); the event, already past its turn (b = 1),
// preempts a task that goes on without sleeping instead.
func (s *Sim) reschedBehindRunOnEnd(r *rq) {
	s.push(event{t: s.now, kind: evResched, cpu: int32(r.cpu), gen: r.reschedGen, b: 1})
}

// atRunOnEnd reports whether r's running task has done its activation's
// demand inside a run-on that reaches the activation's end (Edge.NoPreemptNS
// up to DemandNS, or a fork child's exit notification): in the trace the
// task blocked or exited with TIF_NEED_RESCHED set, and that switch took
// the reschedule. A reschedule falling due at this instant yields to the
// activation's end (evResched): the two coincide, and the queue's order
// among them must not decide whether the task is preempted a nanosecond
// before its block.
func (s *Sim) atRunOnEnd(r *rq) bool {
	t := r.curr
	if t == nil || t.rt || t.act < 0 {
		return false
	}
	d := t.w.Activations[t.act].DemandNS
	return t.noPreemptEnd >= d && progressAt(r, s.now) >= d
}

// inOwnRunOn reports whether r's running task is inside the run-on a
// fired edge of its own recorded (Edge.NoPreemptNS: in the trace that
// wakeup preempted it after exactly that much more of its work). The
// switch then waits for the stretch's end (preemptionPoint), which is the
// trace's own delay for this wakeup; a draw from the pool of such delays
// on top would take the later of two, not the one the trace shows.
func (s *Sim) inOwnRunOn(r *rq) bool {
	t := r.curr
	return t != nil && !t.rt && t.act >= 0 && t.noPreemptEnd > progressAt(r, s.now)
}

// reschedRT is resched_curr() for a real-time wakee on a CFS task's CPU:
// as reschedLater, with the delay drawn from the trace's own real-time
// wakeup preemptions (Workload.PreemptWakeRTNS, initPreemptPools), without
// those a vCPU stall explains when the stall model is on (the replay adds
// the running task's host stalls itself). Fewer than minSamples of them (a few migration/N stopper
// wakeups) estimate no distribution: the wakee then switches in at once.
func (s *Sim) reschedRT(r *rq) {
	if len(s.rtPool) == 0 {
		s.preempt(r)
		return
	}
	s.reschedAfter(r, s.rtPool)
}

// hostStallEnd returns when r's running task, at progress p at time `at`
// (at >= the last charge), is out of the host stall of its activation's
// demand that p falls in (Workload.HostStalls): the end of that stall, or
// `at` outside any. Stalls passed for good are skipped once (nextStall).
func (s *Sim) hostStallEnd(r *rq, at int64) int64 {
	t := r.curr
	if t == nil || t.act < 0 || !s.cfg.IdleWake {
		return at
	}
	if r.stalls != nil {
		return r.stallEnd(at)
	}
	a := &t.w.Activations[t.act]
	for t.nextStall < a.StallHi && s.w.HostStalls[t.nextStall].OffsetNS+s.w.HostStalls[t.nextStall].LenNS <= t.progress {
		t.nextStall++
	}
	p := progressAt(r, at)
	for i := t.nextStall; i < a.StallHi; i++ {
		h := &s.w.HostStalls[i]
		if h.OffsetNS > p {
			break
		}
		if end := min(h.OffsetNS+h.LenNS, a.DemandNS); p < end {
			at, p = timeAtProgress(r, end), end
		}
	}
	return at
}

// progressAt is r's running task's progress at time at (>= r.currStart),
// measured from its last charge: callers may come before updateCurr (the
// real-time wakee's path does), so the time since then counts too.
func progressAt(r *rq, at int64) int64 {
	if r.stalls != nil {
		return r.curr.progress + r.workIn(r.currStart, at)*int64(r.capacity)/capacityScale
	}
	return r.curr.progress + (at-r.currStart)*int64(r.capacity)/capacityScale
}

// timeAtProgress is when r's running task reaches progress p, running on.
func timeAtProgress(r *rq, p int64) int64 {
	capc := int64(r.capacity)
	work := ((p-r.curr.progress)*capacityScale + capc - 1) / capc
	if r.stalls != nil {
		return r.timeForWork(r.currStart, work)
	}
	return r.currStart + work
}

// preemptionPoint is when r's running task, asked to reschedule so that
// the switch would come at `at`, reaches a preemption point: `at`, unless
// its progress then falls inside a stretch where the trace shows it ran
// on with TIF_NEED_RESCHED set (Edge.NoPreemptNS: a wake-up loop under a
// lock, the rest of a system call), then the end of that stretch.
func (s *Sim) preemptionPoint(r *rq, at int64) int64 {
	t := r.curr
	if t == nil || t.rt || t.act < 0 {
		return at
	}
	a := &t.w.Activations[t.act]
	p := progressAt(r, at)
	// The edges already fired lie at or before the progress; their
	// stretches end at t.noPreemptEnd at the latest.
	if end := min(t.noPreemptEnd, a.DemandNS); end > p {
		at, p = timeAtProgress(r, end), end
	}
	for i := t.nextEdge; i < a.EdgeHi; i++ {
		e := &s.w.Edges[i]
		if e.OffsetNS > p {
			break
		}
		if end := min(e.OffsetNS+e.NoPreemptNS, a.DemandNS); e.NoPreemptNS > 0 && p < end {
			at, p = timeAtProgress(r, end), end
		}
	}
	return at
}

// kickIdle: the idle CPU r got work. Without the idle-exit model it runs
// at once; otherwise after a delay drawn from the trace's own
// wakeup-to-run delays on idle CPUs: with host contention measured
// (StallModel.HostCores), a wakeup raised on r itself (its timer or
// interrupt) draws from those raised on the idle CPU itself, one raised
// elsewhere (a task's, a fork's, a held reply's, sent from the waker's
// CPU) from those raised elsewhere with the host uncontended, plus the
// wait for a host core (hostEnd); otherwise from all of them.
func (s *Sim) kickIdle(r *rq) {
	if r.waking || r.inBalance {
		return
	}
	remote := s.heldWake || (r.cpu+1 != s.wakerCPU1 && r.cpu+1 != s.irqCPU1)
	d := s.idleExitDelay(r, remote)
	if r.lateTickAt > s.now {
		if remote {
			// The vCPU already waits for the host to run it for its
			// tick: the IPI changes nothing, and is taken at that run
			// before the tick (the higher vector).
			d = r.lateTickAt - s.now
		} else {
			// A wakeup raised on the vCPU itself (the trace's timer
			// or interrupt, at its recorded time) shows the host
			// running it now: the held tick comes with its exit.
			s.pushLateTick(r, d)
		}
	}
	if d <= 0 {
		s.schedule(r, "")
		return
	}
	s.idleExitIn(r, d)
}

// idleExitIn ends idle CPU r's idle exit d from now.
func (s *Sim) idleExitIn(r *rq, d int64) {
	r.waking = true
	r.idleGen++
	r.idleExitAt = s.now + d
	s.push(event{t: s.now + d, kind: evIdleExit, cpu: int32(r.cpu), gen: r.idleGen})
}

// idleExitDelay draws how long idle CPU r takes to run once something
// wakes it (kickIdle's draw; remote: the wakeup was raised on another
// CPU).
func (s *Sim) idleExitDelay(r *rq, remote bool) int64 {
	d := s.cfg.FixedIdleWakeNS
	if d <= 0 && s.hostContended() {
		pool := s.w.IdleWakeLocalNS
		if remote && len(s.w.IdleWakeRemoteNS) > 0 {
			pool = s.w.IdleWakeRemoteNS
		}
		d = pool[s.rand()%uint64(len(pool))]
		if remote {
			// r itself now wants a host core too.
			d += s.hostEnd(r.cpu, s.now, s.busyCPUs()+1) - s.now
		}
	} else if d <= 0 && s.cfg.IdleWake && len(s.w.IdleWakeNS) > 0 {
		pool := s.idleWakePool
		if s.forking {
			pool = s.idleForkPool
		}
		d = pool[s.rand()%uint64(len(pool))]
	}
	return d
}

// hostContended: the trace measured its host running fewer vCPUs than
// wanted to run (StallModel.HostCores) and the replay draws idle exits
// from its own pools, so an IPI to an idle vCPU waits for the host.
func (s *Sim) hostContended() bool {
	return s.cfg.IdleWake && s.w.Stalls != nil && s.w.Stalls.HostCores > 0 && len(s.w.IdleWakeLocalNS) > 0
}

// enterIdle: the CPU runs its idle task. It records idle_stamp (done by
// newidle balance), updates has_idle_cores and, under NOHZ, stops its tick
// and joins nohz.idle_cpus_mask.
func (s *Sim) enterIdle(r *rq) {
	r.idleSince = s.now
	s.noteCPU(r, true)
	s.updateRQLoad(r)
	if r.newILB {
		// nohz_run_idle_balance at the start of the idle loop, before
		// the tick stops: the blocked-load refresh of the idle CPUs that
		// newidle_balance asked for, unless a kick is on its way.
		r.newILB = false
		if s.nohz.kickFlags[r.cpu] == 0 {
			s.nohz.kickFlags[r.cpu] = kickStats
			s.nohzIdleBalance(r.cpu)
		}
	}
	if s.dom != nil && s.smtActive() && r.idle() && s.coreIdle(r.cpu) {
		s.llc[r.cpu].hasIdleCores = true
	}
	r.idleTicks = 0
	if s.cfg.IdleTicks == 0 || !r.tickOn {
		s.stopIdleTick(r)
	}
}

// stopIdleTick is tick_nohz_idle_stop_tick() on an idle CPU: its tick
// stops and it joins nohz.idle_cpus_mask (nohz_balance_enter_idle), so
// from then on the nohz idle balancer balances it.
func (s *Sim) stopIdleTick(r *rq) {
	r.tickOn = false
	if !s.nohz.idle[r.cpu] {
		s.nohz.idle[r.cpu] = true
		s.nohz.nrCPUs++
		s.nohz.hasBlocked = true
		s.nohz.needsUpdate = true
	}
}

// startTick restarts a CPU's tick at the next jiffy boundary.
func (s *Sim) startTick(r *rq) {
	r.tickOn = true
	if r.tickArmed {
		return
	}
	r.tickArmed = true
	next := s.nextJiffy()
	s.push(event{t: next, cls: 1, kind: evTick, cpu: int32(r.cpu)})
}

// tick is scheduler_tick(): charge the current task, PELT, the CFS slice
// check (check_preempt_tick), then trigger_load_balance. late: an idle
// vCPU's tick already moved to when the host runs it.
func (s *Sim) tick(r *rq, late bool) {
	if r.curr != nil {
		// A busy vCPU the host has descheduled takes its tick late.
		if at := s.hostStallEnd(r, s.now); at > s.now {
			s.push(event{t: at, cls: 1, kind: evTick, cpu: int32(r.cpu)})
			return
		}
	} else if !late && r.tickOn && (r.nrRunning() == 0 || r.waking) && s.cfg.IdleTicks > 0 && s.hostContended() {
		// An idle vCPU's tick is a timer interrupt on it: it runs once
		// the host runs the vCPU, which runs it once for all its
		// interrupts: whichever came first sets when.
		d := s.idleTickLate(r)
		if r.waking {
			// The vCPU already waits for the host to run it for an IPI:
			// the tick comes at that run.
			d = r.idleExitAt - s.now
		}
		if d > 0 {
			s.pushLateTick(r, d)
			return
		}
	}
	r.lateTickAt = 0
	softirqEnd := s.tickSoftirqEnd(r)
	r.tickArmed = false
	if !r.tickOn {
		return
	}
	if len(r.timers) > 0 {
		// The tick is an hrtimer too: the timers whose slack reaches
		// back to it expire in its interrupt, after it (timerslack.go).
		defer s.expireTimers(r.cpu)
	}
	s.tickDeferring = true
	idleAtTick := r.curr == nil && r.nrRunning() == 0
	if idleAtTick {
		r.idleTicks++
		s.stats.IdleTicks++
		s.noteIdleTick(r)
	}
	if r.curr != nil {
		s.tickUpdateCurr(r)
		s.updateTaskLoad(r, r.curr)
		s.updateRT(r) // task_tick_rt
		if !r.curr.rt {
			if s.eevdf {
				// EEVDF's tick is update_curr's reschedule rule alone
				// (nr_queued counts delayed tasks too). A reschedule whose
				// pick is curr again changes nothing (no set_next_entity,
				// so no new protection): only one that switches is made.
				// A wakee of the tick's softirq may yet change the pick
				// (softirqEnd).
				if s.eevdfReschedCurr(r, r.nrCFS+r.nrDelayed) {
					if softirqEnd > s.now || s.eevdfPick(r) != r.curr {
						s.tickResched(r, softirqEnd)
					} else {
						r.tickMaybe = true
					}
				}
			} else if r.nrCFS > 1 {
				s.checkPreemptTick(r, softirqEnd)
			}
			s.updateMisfitStatus(r, r.curr) // task_tick_fair
			s.updateOverutilizedStatus(r.cpu)
		}
	} else {
		s.updateRQLoad(r)
	}
	s.tickDeferring = false
	// The tick's reschedule sets TIF_NEED_RESCHED; the switch comes when
	// the interrupt returns, after irq_exit has run the softirq raised by
	// trigger_load_balance: the pick sees what that balance pulled, and a
	// pulled task's wakeup check finds the flag set and does nothing.
	flagged := (r.tickDue || r.tickMaybe) && !r.reschedPending
	if flagged {
		r.reschedPending = true
	}
	if s.cfg.BalancePhase {
		s.balancePullsDue()
	}
	s.triggerLoadBalance(r, idleAtTick)
	if flagged {
		r.reschedPending = false
	}
	if due, maybe := r.tickDue, r.tickMaybe; due || maybe {
		r.tickDue, r.tickMaybe = false, false
		if r.curr != nil && (due || s.eevdfPick(r) != r.curr) {
			s.reschedAtPoint(r, s.preemptionPoint(r, s.now), false)
		}
	}
	if r.curr == nil && r.nrRunning() == 0 {
		if s.cfg.IdleTicks == 0 {
			// Gone idle without enterIdle (the stopper's push left it
			// nothing): the tick stops, the nohz mask as it was.
			r.tickOn = false
			return
		}
		if r.idleTicks >= s.cfg.IdleTicks {
			s.stopIdleTick(r)
			return
		}
	}
	r.tickArmed = true
	// The next jiffy boundary (s.now + tickNS unless this tick was late).
	s.push(event{t: s.nextJiffy(), cls: 1, kind: evTick, cpu: int32(r.cpu)})
}

// pushLateTick queues idle vCPU r's tick held back by the host d from
// now, in place of any such tick queued before.
func (s *Sim) pushLateTick(r *rq, d int64) {
	r.lateTickGen++
	r.lateTickAt = s.now + d
	s.push(event{t: s.now + d, cls: 1, kind: evTick, cpu: int32(r.cpu), b: 1, gen: r.lateTickGen})
}

// idleTickLate is how late idle vCPU r takes the tick due now: like an
// IPI's, its timer interrupt runs once the host runs the vCPU, an idle
// exit of the CPU's own timers after the wait for a host core (hostEnd,
// the vCPU itself now wanting one). The guests' idle vCPUs skip most of
// their ticks so (FIDELITY.md round 101: of schbench's idle periods of
// 4-16 ms, a quarter to a third take a tick with nothing queued).
func (s *Sim) idleTickLate(r *rq) int64 {
	d := s.idleExitDelay(r, false)
	return d + s.hostEnd(r.cpu, s.now, s.busyCPUs()+1) - s.now
}

// checkPreemptTick is check_preempt_tick(): the slice is used up, or the
// task leads the leftmost by more than a slice after min_granularity.
func (s *Sim) checkPreemptTick(r *rq, softirqEnd int64) {
	curr := r.curr
	ideal := s.schedSlice(r, curr, true)
	ran := curr.sumExec - curr.prevSumExec
	if ran > ideal {
		// clear_buddies(cfs_rq, curr): only the buddies that are curr (a
		// next buddy set by a wakeup whose reschedule is still pending
		// stays).
		if r.next == curr {
			r.next = nil
		}
		if r.last == curr {
			r.last = nil
		}
		s.tickResched(r, softirqEnd)
		return
	}
	if ran < s.minGranNS || len(r.tree) == 0 {
		return
	}
	d := curr.vruntime - r.tree[0].vruntime
	if d > ideal {
		s.tickResched(r, softirqEnd)
	}
}

// tickResched is the tick's resched_curr(): the running task switches at
// its next preemption point, which inside a stretch the trace shows it ran
// on with TIF_NEED_RESCHED set (a wake-up loop in one system call:
// hackbench's parent waking its 80 children through one pipe write) is
// the stretch's end (preemptionPoint), not the tick. The replay had
// switched at the tick, cutting such a loop in two.
//
// A tick whose softirq wakes a tick-softirq arrival on this CPU (softirqEnd
// after now: the last such waking) switches when the interrupt returns,
// after that softirq: the wakee is queued before the pick, which may
// choose it, and the switch comes a delay after its waking drawn from the
// trace's own such delays (Sim.softirqPool).
func (s *Sim) tickResched(r *rq, softirqEnd int64) {
	at := s.now
	if softirqEnd > s.now {
		at = softirqEnd
		if pool := s.softirqPool; s.cfg.IdleWake && len(pool) > 0 {
			at += pool[s.rand()%uint64(len(pool))]
		}
	} else if pool := s.w.TickSwitchNS; s.cfg.TickSwitch && s.cfg.IdleWake && len(pool) > 0 {
		at += pool[s.rand()%uint64(len(pool))]
	}
	if at == s.now && s.tickDeferring {
		// Due at the tick's own instant: after its softirq (Sim.tick).
		r.tickDue = true
		return
	}
	s.reschedAtPoint(r, s.preemptionPoint(r, at), false)
}

// tickSoftirq is a tick boundary whose softirq wakes a tick-softirq
// arrival, and when the last of its wakings on the CPU fires.
type tickSoftirq struct{ boundary, end int64 }

// holdTick notes that the tick at boundary on t's CPU (where its timer
// fires: the CPU it sleeps on) wakes t from its softirq at `at`.
// Boundaries already past (an idle CPU takes no tick to forget them) are
// dropped here.
func (s *Sim) holdTick(t *simTask, boundary, at int64) {
	r := s.cpus[t.cpu]
	keep := r.tickSoftirq[:0]
	for _, p := range r.tickSoftirq {
		if p.boundary == boundary {
			p.end = max(p.end, at)
			boundary = -1
		}
		if p.boundary >= s.now-s.tickNS {
			keep = append(keep, p)
		}
	}
	r.tickSoftirq = keep
	if boundary >= 0 {
		r.tickSoftirq = append(r.tickSoftirq, tickSoftirq{boundary, at})
	}
}

// tickSoftirqEnd is, at r's tick, when the last waking of its softirq
// fires (0: none), forgetting this boundary and any before it. A tick
// the host made late finds its softirq's wakings already fired.
func (s *Sim) tickSoftirqEnd(r *rq) int64 {
	if len(r.tickSoftirq) == 0 {
		return 0
	}
	b := s.tickPhase + s.jiffies()*s.tickNS
	end := int64(0)
	keep := r.tickSoftirq[:0]
	for _, p := range r.tickSoftirq {
		switch {
		case p.boundary > b:
			keep = append(keep, p)
		case p.boundary == b:
			end = p.end
		}
	}
	r.tickSoftirq = keep
	return end
}
