package whatif

// The `v6.6` policy: Linux v6.4–v6.9 (kernel-lb.md §4.7) = `v6.1`
// (v5.18–v6.3: 0b0695f2b34a + 070f5e860ee2 + 16b0a7a1a0af + e496132ebedd +
// the v6.0 NUMA and misfit changes, and, as in the 6.1 and 6.6 stable
// series now, 91dcf1e8068e "sched/fair: Fix imbalance overflow" (v6.4: a
// fully busy local group at or above the busiest's or the domain's
// avg_load pulls nothing) and 3af7524b1419 (v6.8, in 6.6.y since Nov 2025:
// the migrate_util detach test relaxed by failures)) +
//   - the v6.6 SMT/cluster work (Tim Chen, Ricardo Neri): fee1759e4f04
//     "sched/fair: Determine active load balance for SMT sched groups"
//     (group_smt_balance: a non-local SMT group with more than one task,
//     balanced by a dst that is not busy, is pulled one task), d24cb0d9113f
//     "sched/topology: Record number of cores in sched group",
//     "sched/fair: Implement prefer sibling imbalance calculation between
//     asymmetric groups" (sibling_imbalance: equalise tasks per core, zero
//     for a busy dst), "sched/fair: Keep a fully_busy SMT sched group as
//     busiest", and the fix ad468232c3eb "sched/fair: Fix SMT4
//     group_smt_balance handling" (v6.6-rc2);
//   - "sched/fair: Use the busiest group to set prefer_sibling" (Ricardo
//     Neri, in 6.6.0's fair.c): prefer_sibling comes from the busiest
//     group's child-domain flags, not the local domain's child;
//   - the EEVDF run queue (147f3efaa241 "sched/fair: Implement an EEVDF-like
//     scheduling policy", v6.6);
//   - should_we_balance's preference for a CPU on a fully idle core
//     (b1bfeab9b002, with its fix 6d7e4782bcf5 from v6.7, in 6.6.y);
//   - find_busiest_queue's migrate_util by the runnable-boosted
//     utilisation (7d0583cf9ec7, v6.5, with c2e164ac33f7).
//
// The NUMA allowance is imb-nr-dst, as in v6.1.
func init() {
	RegisterPolicy("v6.6", func() Policy { return newV66() })
}

func newV66() *reworkPolicy {
	p := newV61()
	p.name = "v6.6"
	p.kernels = "v6.4–v6.9: v6.1 (with 91dcf1e8068e, 3af7524b1419) + fee1759e4f04, d24cb0d9113f, ad468232c3eb (SMT/cluster sibling imbalance) + prefer_sibling from the busiest group + b1bfeab9b002 (should_we_balance prefers an idle core) + 7d0583cf9ec7 (runnable-boosted migrate_util) + EEVDF"
	p.r.SMTBalance = true
	p.knobs.IdleCoreBalance = true
	p.knobs.RunnableBoost = true
	p.r.PreferSiblingBusiest = true
	// The 6.6 LTS series took the 0.70 ms base slice (2ae891b82695; in
	// the 6.6.150 source).
	p.knobs.BaseSlice070 = true
	p.knobs.EEVDF = true
	// 82d6e01a0699 (find_idlest_group's statistics of the CPUs a task may
	// use), in the 6.6 stable series from July 2026 as in 6.1's: kept on.
	p.knobs.WakeupStatsAllowed = true
	p.knobs.UtilEstRunnableSkip = true
	return p
}
