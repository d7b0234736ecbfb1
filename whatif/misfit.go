package whatif

// Misfit tasks (v4.20 on, 3b1baa6496e6 and its series): on a machine of
// unequal capacities a CPU-bound task on a small CPU never frees it, so
// no wakeup can place it better, and a balancer that only evens load
// sees nothing wrong with one task per CPU. The kernel marks the CPU
// running a task that does not fit it (rq->misfit_task_load, its
// task_h_load), a balancer over the asymmetric domain classes that
// group misfit_task, an idle CPU of more capacity pulls the task by
// active balance, and the tick of the misfit CPU kicks the nohz idle
// balancer.

// updateMisfitStatus is update_misfit_status(): at a pick (p the task
// picked, nil going idle) and at each tick of a running CFS task, the
// CPU's misfit load is the task's task_h_load when its utilisation
// (util_est included) does not fit capacity_of with the 20 % margin,
// else 0. The reworked balancer's kernels leave out a task that may run
// on one CPU only.
func (s *Sim) updateMisfitStatus(r *rq, p *simTask) {
	if !s.misfitOn {
		return
	}
	if p == nil || (s.misfitV6 && (p.pinned >= 0 || p.nrAllowed == 1)) || fitsCapacity(p.utilEstValue(), r.cpuCapacity) {
		r.misfitTaskLoad = 0
		return
	}
	r.misfitTaskLoad = s.taskHLoad(p)
}

// checkMisfitStatus is check_misfit_status() (v5.1 on): a misfit on a
// CPU short of the biggest, or whose capacity other classes took, is
// worth a nohz kick.
func (s *Sim) checkMisfitStatus(r *rq) bool {
	if r.misfitTaskLoad == 0 {
		return false
	}
	return r.capacity < s.maxCapOrig || len(r.sd) > 0 && checkCPUCapacity(r, uint64(r.sd[0].sd.ImbalancePct))
}
