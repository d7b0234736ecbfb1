package whatif

// The `v6.12` policy: Linux v6.12–v6.14 = `v6.10`'s load balancer with
// EEVDF's delayed dequeue (152e11f6df29 "sched/fair: Implement delayed
// dequeue", v6.12; features DELAY_DEQUEUE and DELAY_ZERO, both on): a
// task that blocks while not eligible stays queued on its CPU, in the
// load and the average vruntime but not runnable, until pick_eevdf picks
// it (then it leaves, a positive lag clipped to 0) or it is woken (then
// it is queued again where it is, without select_task_rq, re-placed at V
// if its lag has turned positive). The balancer may move it, for any
// migration type (6.12.19's can_migrate_task has no test for it; from
// v6.14 only to migrate load, 61b82dfb6b7e, in `latest`); it stays
// delayed on its new CPU. The balancer's task counts include delayed
// tasks (6.12.y's cfs.h_nr_queued; v6.14's 1a49104496d3, in `latest`,
// leaves them out). PolicyForKernel gives a 6.14 release this policy with
// v6.14's three balancer changes applied (mainlineAdds).
//
// PREEMPT_SHORT's update_curr rule (85e511df3cec, v6.12) is in: a task
// past its pick-time slice protection is rescheduled once it is no longer
// eligible, at any update_curr with others queued (v6.6–v6.11: only in the
// update that finds its request used up).
//
// So is PLACE_REL_DEADLINE (82e9d0456e06): a task the balancer or the
// stopper moves keeps its deadline relative to its vruntime.
//
// Not modelled: PREEMPT_SHORT's wakeup rule and custom slices (tasks here
// share one slice, so a wakee never has the shorter one), and a delayed
// task's PELT load (it decays as a sleeper's instead of accruing).
// can_migrate_task's soft limit on ineligible tasks is v6.14's
// 873199d27bb2 (Knobs.MigrateEligibleFirst, in `latest`).
func init() {
	RegisterPolicy("v6.12", func() Policy { return newV612() })
}

func newV612() *reworkPolicy {
	p := newV610()
	p.name = "v6.12"
	p.kernels = "v6.12–v6.14: v6.10 + EEVDF delayed dequeue (152e11f6df29) + PREEMPT_SHORT's reschedule of an ineligible task (85e511df3cec) + PLACE_REL_DEADLINE (82e9d0456e06)"
	p.knobs.DelayDequeue = true
	p.knobs.ForkHalfDeadline = true
	p.knobs.ReschedIneligible = true
	p.knobs.PlaceRelDeadline = true
	// The 6.12 LTS series took the 0.70 ms base slice (2ae891b82695,
	// 6.12.26).
	p.knobs.BaseSlice070 = true
	// The 6.12 LTS series took NI_RANDOM (33cf66d88306) in 6.12.65
	// (January 2026); PolicyForKernel takes it out for a release naming
	// an earlier sublevel (stableBefore).
	p.knobs.NIRandom = true
	// Whether it took 82d6e01a0699 (find_idlest_group's allowed CPUs,
	// in 5.10.y, 6.1.y, 6.6.y and 6.18.y from July 2026) is not checked
	// here, and Debian's 6.12.57 predates it: off (--apply 82d6e01a0699).
	p.knobs.WakeupStatsAllowed = false
	return p
}
