package whatif

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
// target_cpu, moved by the wakeup's sched_migrate_task) until the first
// sched_stat_runtime of that CPU's running task, written on any CPU: the
// enqueue's update_curr. When that record is the CPU's own in hard IRQ it
// is the enqueue's, not a tick. A pending waking lapses at the CPU's next
// switch, or after enqueueLapseNS (the wakee was enqueued on an idle CPU
// or beside a task whose class writes no such record).
type irqEnqueues struct {
	pend [][]pendEnqueue // per CPU
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
// to be enqueued on target.
func (q *irqEnqueues) waking(pid, from, target int32, hard bool, at int64) {
	q.add(target, pendEnqueue{pid, at, from, hard})
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

// switched: CPU c switched; what was pending there is done.
func (q *irqEnqueues) switched(c int32) {
	if int(c) < len(q.pend) {
		q.pend[c] = q.pend[c][:0]
	}
}

// runtime: a sched_stat_runtime written at `at` for the task running on
// CPU of (the CPU it was written on or another). It reports whether the
// record is the enqueue of a waking pending on that CPU (consuming it). A
// waking on the CPU it enqueues on, outside hard IRQ, writes its
// enqueue's record in its own context, never taken for a tick: it is
// passed over.
func (q *irqEnqueues) runtime(of int32, at int64) bool {
	if of < 0 || int(of) >= len(q.pend) {
		return false
	}
	ps := q.pend[of]
	for i, p := range ps {
		if at-p.at > enqueueLapseNS || p.from == of && !p.hard {
			continue
		}
		q.pend[of] = append(ps[:0], ps[i+1:]...)
		return true
	}
	q.pend[of] = ps[:0]
	return false
}
