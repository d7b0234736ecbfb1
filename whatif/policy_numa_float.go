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
// the engine's (v6.x) one.
func init() {
	RegisterPolicy("numa-float", func() Policy { return newNumaFloat() })
}

func newNumaFloat() *reworkPolicy {
	p := newLLCNrRunning()
	p.name = "numa-float"
	p.kernels = "v5.11–v5.17: llc-nr-running + 7d2b5dd0bcc4, 23e6082a522e (NUMA allowance: 25% of the group)"
	p.r.Numa = NumaFloat25
	return p
}
