package whatif

// The `v6.10` policy: Linux v6.10–v6.11 (kernel-lb.md §4.8) = `v6.6` +
//   - update_sd_pick_busiest keeps the first of two equal misfit groups
//     (strict ">" for misfit load);
//   - 3af7524b1419 "sched/fair: Use all little CPUs for CPU-bound
//     workloads" (Pierre Gondois, v6.8; backported to 6.6.y in Nov 2025):
//     detach_tasks' migrate_util test relaxes with the failures like the
//     load test, (util_est >> nr_balance_failed) > imbalance rejects;
//   - 72bffbf57c52 "sched/fair: Fix initial util_avg calculation" (v6.10):
//     a new task's util_avg from its CPU's util per unit of load, not
//     half its spare capacity (Knobs.InitUtilTrueWeight);
//   - 2227a957e1d5 "sched/eevdf: Sort the rbtree by virtual deadline"
//     (v6.8): equal deadlines picked in insertion order
//     (Knobs.DeadlineTree);
//   - 8881e1639f1f "sched/fair: Scan cluster before scanning LLC in
//     wake-up path" with 22165f61d0c4 (v6.7): on a machine with clusters
//     the wakeup looks for an idle CPU in the target's cluster first
//     (Knobs.ClusterWakeup; not in 6.6.y).
//
// These are also the load-balancer rules of `v6.12` and `latest`, which
// change the EEVDF run queue only.
//
// The unsigned idle_cpus difference in calculate_imbalance is kept as the
// kernel computes it: the lsub_positive fix ("sched/fair: Fix integer
// underflow", Fixes: 16b0a7a1a0af) was posted in Oct 2024 and reposted in
// Feb 2026 unmerged (kernel-lb.md §9.11); lbRules.IdleUnderflowFixed
// models it.
//
// Not modelled (engine-level, or irrelevant without misfit/asymmetric
// CPUs): misfit checked before the EAS gate and misfit failures not
// counted.
func init() {
	RegisterPolicy("v6.10", func() Policy { return newV610() })
}

func newV610() *reworkPolicy {
	p := newV66()
	p.name = "v6.10"
	p.kernels = "v6.10–v6.11: v6.6 + strict misfit pick + 3af7524b1419 (util detach relaxed by failures) + 2227a957e1d5 (EEVDF tree sorted by deadline) + 72bffbf57c52 (initial util_avg) + 8881e1639f1f (cluster-first wakeup scan)"
	p.r.StrictMisfitPick = true
	p.knobs.ClusterWakeup = true
	p.r.UtilShrBound = true
	// 6.10 and 6.11 never took the 0.70 ms base slice (v6.6's LTS
	// backport).
	p.knobs.BaseSlice070 = false
	p.knobs.StatRuntimeAllClasses = true
	p.knobs.InitUtilTrueWeight = true
	p.knobs.DeadlineTree = true
	p.knobs.UtilEstSingle = true
	// v6.10 and v6.11 left stable support before NI_RANDOM and
	// 82d6e01a0699 (find_idlest_group's allowed CPUs) were backported.
	p.knobs.NIRandom = false
	p.knobs.WakeupStatsAllowed = false
	return p
}
