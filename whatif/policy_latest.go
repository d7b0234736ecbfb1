package whatif

// The `latest` policy: Linux v6.15 on (kernel-lb.md §4.8) = `v6.12`
// (delayed dequeue on `v6.10`'s load balancer) with the EEVDF base slice
// of 0.70 ms × the CPU factor (2ae891b82695 "sched: Reduce the default
// slice to avoid tasks getting an extra tick", v6.15; 0.75 ms before, but
// backported to the 6.6 and 6.12 stable series, so `v6.6` and `v6.12` have
// it as those series do now: `--revert 2ae891b82695` for an earlier
// 6.6.y or 6.12.y), and
// two changes to EEVDF's wakeup preemption that the 6.18.y stable series
// also took in May 2026 (so this project's 6.18.44 machine has them;
// `--revert` them for a kernel without): a fork never preempts
// (e837456fdca8, NEXT_BUDDY's re-implementation, v6.19, whose forced
// preemption of a waker no longer eligible was reverted before the release,
// 15257cc2f905, and whose buddy stays off, NEXT_BUDDY's default), and the
// check's pick dequeues a delayed task it finds (ac8e69e69363, v7.1).
// update_curr reschedules a task whenever its slice protection is over and
// others are queued (0b9ca2dcabc3, v6.17; `--revert 0b9ca2dcabc3` for
// v6.15 and v6.16, which rescheduled it only once it was no longer
// eligible). The lag is clamped to the largest queued slice plus one
// tick (6e3c0a4e1ad1, v7.0, also in 6.18.y: 6.18.35 has it; `--revert`
// it for an earlier 6.18.y or a v6.15–v6.19 kernel). The balancer moves
// a delayed task only to migrate load (61b82dfb6b7e, v6.14).
// find_idlest_group's statistics count only the CPUs a task with an
// affinity may use (82d6e01a0699, v6.19, in 6.18.y since 6.18.39).
// The balancer counts a CPU's CFS tasks without the delayed ones
// (1a49104496d3, v6.14: Knobs.HNrRunnable), and leaves a task not eligible
// where it waits until the domain's balancing fails (873199d27bb2, v6.14:
// Knobs.MigrateEligibleFirst).
//
// v6.19's NI_RANDOM newidle balance (on in `v6.12`, whose stable series
// took it) is off (`--apply 33cf66d88306`). This project's 6.18.44 machine
// probably runs it (its feature mask has one set bit after LATENCY_WARN,
// where upstream 6.18.y puts NI_RANDOM; a vendor feature cannot be ruled
// out), but its replays meet fewer goals with it (FIDELITY.md round 74):
// the replay's placements leave CPUs idle beside queued tasks more often
// than the kernel's, and newidle pulls make up for it. Not
// modelled: v6.19's SD_SERIALIZE gate, and v6.17's
// RUN_TO_PARITY limit to the shortest queued slice (the model has one slice
// for all); see also policy_v612.go.
func init() {
	RegisterPolicy("latest", func() Policy { return newLatest() })
}

func newLatest() *reworkPolicy {
	p := newV612()
	p.name = "latest"
	p.kernels = "v6.15 on: v6.12 + the 0.70 ms EEVDF base slice (2ae891b82695), no wakeup preemption by a fork (e837456fdca8), delayed tasks dequeued by the wakeup check (ac8e69e69363), v6.17's reschedule at the end of the slice protection (0b9ca2dcabc3), the lag clamped to a slice plus a tick (6e3c0a4e1ad1), delayed tasks moved only for migrate_load (61b82dfb6b7e), fork statistics of the allowed CPUs (82d6e01a0699), the balancer's task counts without delayed tasks (1a49104496d3), eligible tasks migrated first (873199d27bb2)"
	p.knobs.BaseSlice070 = true
	p.knobs.ForkNoPreempt = true
	p.knobs.WakeupPickDelayed = true
	p.knobs.ReschedUnprotected = true
	p.knobs.LagClampMaxSlice = true
	p.knobs.DelayedMigrateLoadOnly = true
	p.knobs.WakeupStatsAllowed = true
	p.knobs.HNrRunnable = true
	p.knobs.MigrateEligibleFirst = true
	// Off although this project's 6.18.44 probably runs it: see above.
	p.knobs.NIRandom = false
	return p
}
