package whatif

// The `runnable-avg` policy: Linux v5.7–v5.9 (kernel-lb.md §4.3) =
// `rework-numa2` + 070f5e860ee2 "sched/fair: Take into account runnable_avg
// to classify group" (Vincent Guittot, the "remove runnable_load_avg and
// improve group_classify" series): a group with at least as many tasks as
// CPUs whose runnable sum exceeds imbalance_pct of its capacity is never
// has_spare, and with more tasks than CPUs it is overloaded. runnable_avg
// counts waiting time, so it stays high after a task leaves a CPU while
// util_avg drops; classification no longer flips to has_spare in bursts.
// The NUMA allowance stays min2-src (adjust_numa_imbalance, v5.7).
// Tunables as v5.5 (imbalance_pct 125 above the LLC, busy_factor 32, CFS).
func init() {
	RegisterPolicy("runnable-avg", func() Policy { return newRunnableAvg() })
}

func newRunnableAvg() *reworkPolicy {
	p := newReworkNuma2()
	p.name = "runnable-avg"
	p.kernels = "v5.7–v5.9: rework-numa2 + 070f5e860ee2 (runnable_avg in group_classify)"
	p.r.Runnable = true
	return p
}
