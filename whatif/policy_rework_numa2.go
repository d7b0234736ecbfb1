package whatif

// The `rework-numa2` policy: Linux v5.6 (kernel-lb.md §4.2, last
// paragraph) = `rework` (v5.5, 0b0695f2b34a) + b396f52326de "sched/fair:
// Allow a small load imbalance between low utilisation SD_NUMA domains"
// (Mel Gorman): when the local group has spare capacity, a NUMA domain
// leaves a pair of communicating tasks where they are: the halved task
// imbalance is dropped when the busiest group runs at most 2 tasks
// (NumaRule min2-src; the helper adjust_numa_imbalance came in v5.7).
// Tunables as v5.5 (imbalance_pct 125 above the LLC, busy_factor 32, CFS).
func init() {
	RegisterPolicy("rework-numa2", func() Policy { return newReworkNuma2() })
}

func newReworkNuma2() *reworkPolicy {
	p := newRework()
	p.name = "rework-numa2"
	p.kernels = "v5.6: 0b0695f2b34a + b396f52326de (NUMA: keep pairs local)"
	p.r.Numa = NumaMin2Src
	return p
}
