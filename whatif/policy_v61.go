package whatif

// The `v6.1` policy: the load balancer of Linux v6.1 (the v6.1 LTS, the
// kernel that recorded the fixtures), valid for v5.18–v6.3 (kernel-lb.md
// §4.6). It is the v5.5 rework (0b0695f2b34a "sched/fair: Rework
// load_balance()": group types, migration types) with
//   - runnable_avg in group classification (v5.7, 070f5e860ee2 "sched/fair:
//     Take into account runnable_avg to classify group");
//   - tasks spread by nr_running inside LLC domains (v5.10, 16b0a7a1a0af
//     "sched/fair: Ensure tasks spreading in LLC during LB") and the v5.10
//     set: busy interval minus one jiffy, the shr_bound detach rule ("Relax
//     constraint on task's load during load balance"), active balance only
//     for migrate_task failures and misfits ("Reduce cases for active
//     balance");
//   - the NUMA imbalance allowance applied to the destination with
//     imb_numa_nr (e496132ebedd, v5.18; "sched/numa: Apply imbalance
//     limitations consistently", v6.0): allow up to NUMA_IMBALANCE_MIN (2)
//     tasks while local.sum_nr_running+1 <= imb_numa_nr, then halve;
//   - the unsigned idle_cpus difference in calculate_imbalance kept as the
//     kernel computes it (the lsub_positive fix came later);
//   - newidle gate of v5.16 and SIS_UTIL wakeup scans (v6.0, 70fb5ccf2ebb);
//   - two later fixes the 6.1 LTS series took (both in its fair.c at
//     6.1.166, so in the fixtures' 6.1.192): the imbalance-overflow guard
//     (91dcf1e8068e, v6.4) and the migrate_util detach test relaxed by
//     failures (3af7524b1419, v6.8); a 6.1.y before them: `--revert`;
//   - NI_RANDOM newidle balancing (33cf66d88306, v6.19), which the 6.1 LTS
//     series took in December 2025: the fixtures' Debian 6.1.192 lists it
//     in sched/features, and their /proc/schedstat newidle counts agree
//     with it (FIDELITY.md round 23). A v5.18–v6.3 release, or a 6.1.y
//     before the backport, ran without it: `--revert 33cf66d88306`;
//   - LBF_ALL_PINNED set before the nr_running > 1 test and cleared by an
//     active balance's kick (8a41dfcda7a3, v5.12; this model had it
//     from v6.6 until FIDELITY.md round 56).
//
// Not included (later than v6.1): group_smt_balance and sibling_imbalance
// (v6.6). Misfit needs asymmetric CPUs (update_misfit_status
// returns early without sched_asym_cpucapacity), which the simulator does not
// produce; the misfit rules are present for completeness.
//
// It is the rule set of reworkPolicy (policy_rework.go) with these changes
// switched on, so single commits can be reverted (--revert) like in every
// other policy since the rework.
func init() { RegisterPolicy("v6.1", func() Policy { return newV61() }) }

func newV61() *reworkPolicy {
	p := newLLCNrRunning()
	p.name = "v6.1"
	p.kernels = "v5.18–v6.3 (v6.1 LTS): 0b0695f2b34a + 070f5e860ee2 + 16b0a7a1a0af + e496132ebedd + v6.0 NUMA/SIS_UTIL (70fb5ccf2ebb) + 91dcf1e8068e, 3af7524b1419, NI_RANDOM (33cf66d88306) and 82d6e01a0699 as 6.1.y has them"
	p.r.Numa = NumaImbNrDst
	p.r.MisfitLoadSym = true
	p.r.OverflowGuard = true
	p.r.UtilShrBound = true
	p.r.ActiveTaskOnly = true
	p.knobs = Knobs{IntervalMinusOne: true, ImbalancePctDefault: 117, BusyFactor: 16, NewidleGate516: true, SISUtil: true, SelectIdleCapacity: true,
		BaseSlice: true, NIRandom: true, ForkNumaIdleDiff: true, AllPinnedEarly: true, StatRuntimeRT: true, WakeupStatsAllowed: true}
	return p
}

// groupHasCapacity is group_has_capacity() with the v5.7 runnable test.
func groupHasCapacity(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning < sgs.GroupWeight {
		return true
	}
	if sgs.GroupCapacity*pct < sgs.GroupRunnable*100 {
		return false
	}
	return sgs.GroupCapacity*100 > sgs.GroupUtil*pct
}

// groupIsOverloaded is group_is_overloaded() with the v5.7 runnable test.
func groupIsOverloaded(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning <= sgs.GroupWeight {
		return false
	}
	if sgs.GroupCapacity*100 < sgs.GroupUtil*pct {
		return true
	}
	return sgs.GroupCapacity*pct < sgs.GroupRunnable*100
}
