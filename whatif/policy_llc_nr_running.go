package whatif

// The `llc-nr-running` policy: Linux v5.10 (kernel-lb.md §4.4) =
// `runnable-avg` + 16b0a7a1a0af "sched/fair: Ensure tasks spreading in LLC
// during LB" (Vincent Guittot; reported by Chris Mason, v5.10-rc4): inside
// a domain sharing the LLC (SD_SHARE_PKG_RESOURCES: SMT, CLS, MC) an
// overloaded busiest group and a local group with spare capacity are
// balanced by task count (nr_running difference for one-CPU groups or
// prefer_sibling, else idle CPUs), like the wakeup path's idle-CPU search,
// instead of by spare utilisation; above the LLC the util path remains.
// With it the v5.10 set that changed together:
//   - "sched/fair: Relax constraint on task's load during load balance":
//     detach rejects when (load >> nr_balance_failed) > imbalance;
//   - "sched/fair: Reduce minimal imbalance threshold": imbalance_pct 117
//     above the LLC; "Reduce busy load balance interval": busy_factor 16;
//     "Minimize concurrent LBs between domain level": busy interval - 1.
//
// ("sched/fair: Reduce cases for active balance", e9b9734b7465, which this
// model once placed here, came in v5.12: numa-float.)
//
// The idle_cpus difference is the kernel's unsigned subtraction (it can
// wrap from this commit on; fixed later by lsub_positive). NUMA allowance
// min2-src. CFS, newidle gated by sysctl_sched_migration_cost, SIS_PROP
// (not modelled: the scan is unlimited).
func init() {
	RegisterPolicy("llc-nr-running", func() Policy { return newLLCNrRunning() })
}

func newLLCNrRunning() *reworkPolicy {
	p := newRunnableAvg()
	p.name = "llc-nr-running"
	p.kernels = "v5.10: runnable-avg + 16b0a7a1a0af (LLC spreads by nr_running) + v5.10 LB tweaks"
	p.r.LLCNrRunning = true
	p.r.ShrBound = true
	p.knobs = Knobs{IntervalMinusOne: true, ImbalancePctDefault: 117, BusyFactor: 16, SelectIdleCapacity: true}
	return p
}
