package whatif

import "math"

// Telling a tick's update_curr from an enqueue's.
//
// Extraction takes a hard-IRQ sched_stat_runtime of a CPU's running task
// for that CPU's tick (update_curr in task_tick_fair). An enqueue run in
// an interrupt writes one too: an hrtimer's wakeup on its own CPU, or a
// remote wakeup the target CPU enqueues in its IPI (ttwu_queue_wakelist,
// on CPUs that share no cache). Taken for ticks, those records put a
// "tick" inside nearly every such wakeup's delay: on the 6.1 guests'
// hogs (QEMU's TCG, where a record costs tens of microseconds) 25 of the
// 40 local wakeup preemptions with a tick inside were hard-IRQ wakings
// whose own enqueue, 30–130 µs later, wrote the record, the running
// task's TIF_NEED_RESCHED, which that enqueue's check_preempt_wakeup
// sets, still clear in it (FIDELITY.md round 65).
//
// So a waking is pending on the CPU it is enqueued on (sched_waking's
// target_cpu, moved by the wakeup's sched_migrate_task) until its
// enqueue's update_curr of that CPU's running task, the first record
// written where that enqueue runs: in the waker's own context (a local
// wakeup, or a remote one onto a CPU sharing its cache, written on the
// waker's CPU), or in the target CPU's hard IRQ for a waking from a CPU
// that shares no cache with it (the wakelist IPI, which enqueues every
// waking queued by then with one update of the running task). When that
// record is the target CPU's own in hard IRQ it is the enqueue's, not a
// tick. The running task's own updates in between (its system calls) do
// not end the wait, nor does a switch on the target CPU: the IPI may
// come after it (on guest-N's stress-ng the IPI of a waking from the
// other socket often lands on the task switched in next). A real-time
// or stop-class wakee's enqueue updates no CFS task: nothing is pending.
// A pending waking lapses when its wakee is switched in, or after
// enqueueLapseNS (the wakee was enqueued beside a task whose class
// writes no such record). The sleeper's statistics, where the trace has
// them, correct the rest (enqueueInIRQ in workload.go).
//
// Checked against each CPU's tick phase (tickgrid.go, scripts/tickgrid;
// FIDELITY.md round 66): on the two-vCPU guests' 105 recordings under
// 6.1 and 6.12, 93–96 % of the records taken for ticks fall within 0.3 ms
// of the phase of the CPU's 4 ms tick grid, and 10.7–14.9 % of the
// others, no more than a uniform spread gives (15 %). On the eight-vCPU
// guests, whose vCPUs the host holds back, the ticks themselves scatter
// (45–54 % on the grid) and the check tells little.
type irqEnqueues struct {
	pend [][]pendEnqueue // per CPU
	// llc: each CPU's last-level cache (sd_llc_id), nil when the
	// topology is unknown. A waker that shares a cache with a busy target
	// enqueues the wakee itself; only across caches does the target's
	// IPI do it (ttwu_queue_cond; onto an idle CPU, which writes no such
	// record, the IPI is used either way).
	llc []int
	// wokeAt: each wakee's last waking, until it is switched in.
	wokeAt map[int32]int64
}

type pendEnqueue struct {
	pid  int32
	at   int64
	from int32 // the CPU the waking ran on
	hard bool  // the waking ran in hard IRQ
}

// enqueueLapseNS bounds the time from a waking to its enqueue's
// update_curr: 30–140 µs on the 6.1 guests' hogs. Where the enqueue
// writes nothing (beside a real-time task) a tick within the lapse is
// taken for the enqueue's: at HZ 250 one such waking in eight.
const enqueueLapseNS = 500000

func (q *irqEnqueues) grow(c int32) {
	for int(c) >= len(q.pend) {
		q.pend = append(q.pend, nil)
	}
}

// waking: pid's wakeup, run on CPU from (in hard IRQ if hard) at `at`,
// to be enqueued on target. A real-time wakee's enqueue (enqueue_task_rt)
// updates no CFS task: nothing is pending, and no record is its.
func (q *irqEnqueues) waking(pid, from, target int32, hard, rt bool, at int64) {
	if q.wokeAt == nil {
		q.wokeAt = map[int32]int64{}
	}
	if rt {
		q.wokeAt[pid] = math.MaxInt64
		return
	}
	q.add(target, pendEnqueue{pid, at, from, hard})
	q.wokeAt[pid] = at
}

// since: pid's waking still before its switch-in (the end of time for a
// real-time wakee), else the start of time (a trace without sched_waking).
func (q *irqEnqueues) since(pid int32) int64 {
	if at, ok := q.wokeAt[pid]; ok {
		return at
	}
	return math.MinInt64
}

// add keeps p pending on target, dropping what has lapsed there (a CPU
// that neither switches nor updates its task, one running a real-time
// task, would otherwise gather every waking aimed at it).
func (q *irqEnqueues) add(target int32, p pendEnqueue) {
	if target < 0 {
		return
	}
	q.grow(target)
	ps := q.pend[target][:0]
	for _, o := range q.pend[target] {
		if p.at-o.at <= enqueueLapseNS {
			ps = append(ps, o)
		}
	}
	q.pend[target] = append(ps, p)
}

// migrate: the wakeup placed pid on dest instead.
func (q *irqEnqueues) migrate(pid, dest int32) {
	for c, ps := range q.pend {
		for i, p := range ps {
			if p.pid == pid {
				q.pend[c] = append(ps[:i], ps[i+1:]...)
				q.add(dest, p)
				return
			}
		}
	}
}

// ran: pid was switched in; its enqueue is past.
func (q *irqEnqueues) ran(pid int32) {
	delete(q.wokeAt, pid)
	for c, ps := range q.pend {
		for i, p := range ps {
			if p.pid == pid {
				q.pend[c] = append(ps[:i], ps[i+1:]...)
				return
			}
		}
	}
}

// runtime: a sched_stat_runtime written on CPU w (in hard IRQ if hard)
// at `at` for the task running on CPU of (w or another). It reports
// whether the record is the enqueue of a waking pending on of, consuming
// that waking: one whose waker ran on w in the same context (in hard IRQ
// or not), or, in hard IRQ on of itself, every one from a CPU sharing no
// cache with of (its IPI).
func (q *irqEnqueues) runtime(w, of int32, hard bool, at int64) bool {
	if of < 0 || int(of) >= len(q.pend) {
		return false
	}
	ps := q.pend[of]
	for i, p := range ps {
		if at-p.at > enqueueLapseNS {
			continue
		}
		if p.from == w && p.hard == hard {
			q.pend[of] = append(ps[:i], ps[i+1:]...)
			return true
		}
		if w == of && hard && p.from != of && !q.shareCache(p.from, of) {
			// The IPI enqueues every waking queued on the CPU's
			// wakelist, updating the running task once (the
			// others find its clock unchanged).
			kept := ps[:0]
			for _, o := range ps {
				if o.from == of || q.shareCache(o.from, of) || at-o.at > enqueueLapseNS {
					kept = append(kept, o)
				}
			}
			q.pend[of] = kept
			return true
		}
	}
	return false
}

func (q *irqEnqueues) shareCache(a, b int32) bool {
	return int(a) < len(q.llc) && int(b) < len(q.llc) && q.llc[a] == q.llc[b]
}
