package whatif

// The `numa-float` policy: Linux v5.11–v5.17 (kernel-lb.md §4.5) =
// `llc-nr-running` with the floating NUMA allowance of 7d2b5dd0bcc4
// "sched/numa: Allow a floating imbalance between NUMA nodes" and
// 23e6082a522e "sched: Limit the amount of NUMA imbalance that can exist
// at fork time" (Mel Gorman, v5.11): the halved task imbalance (<= 2) is
// dropped while the busiest group runs fewer tasks than a quarter of its
// CPUs (NumaRule float25; v5.17 compared with the domain's span instead,
// float25-span [~ver], selectable with --numa-rule). The v5.16 newidle
// gate and v5.13 NOHZ blocked-load kick are not part of this policy (it
// models v5.11–v5.15 there); the wakeup slow path's NUMA allowance is
// the engine's (v6.x) one. From v5.12 on (on here; `--revert` both for
// v5.11), Vincent Guittot's series: e9b9734b7465 "sched/fair: Reduce cases
// for active balance" (the failure-count active balance only for
// migrate_task) and 8a41dfcda7a3 "sched/fair: Don't set LBF_ALL_PINNED
// unnecessarily" (the flag set before the nr_running test, cleared by an
// active balance's kick).
func init() {
	RegisterPolicy("numa-float", func() Policy { return newNumaFloat() })
}

func newNumaFloat() *reworkPolicy {
	p := newLLCNrRunning()
	p.name = "numa-float"
	p.kernels = "v5.11–v5.17: llc-nr-running + 7d2b5dd0bcc4, 23e6082a522e (NUMA allowance: 25% of the group) + e9b9734b7465, 8a41dfcda7a3 (v5.12)"
	p.r.Numa = NumaFloat25
	p.r.ActiveTaskOnly = true
	p.knobs.AllPinnedEarly = true
	return p
}
