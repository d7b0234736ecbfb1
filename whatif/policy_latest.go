package whatif

// The `latest` policy: Linux v6.15–v6.19 (kernel-lb.md §4.8) = `v6.12`
// (delayed dequeue on `v6.10`'s load balancer) with the EEVDF base slice
// of 0.70 ms × the CPU factor (2ae891b82695 "sched: Reduce the default
// slice to avoid tasks getting an extra tick", v6.15; 0.75 ms before, but
// backported to the 6.6.89 and 6.12.26 stable releases, which the
// release-to-policy map cannot tell: `--apply 2ae891b82695` there), and
// with the wakeup preemption of NEXT_BUDDY's re-implementation
// (e837456fdca8, v6.19, also in the 6.18.y stable series from May 2026:
// `--revert e837456fdca8` for a v6.15–v6.18 kernel without it; the buddy
// itself stays off, as NEXT_BUDDY's default before v6.19 and on this
// project's 6.18 machine).
//
// Not modelled: v6.19's NI_RANDOM newidle and SD_SERIALIZE gate, the
// NEXT_BUDDY feature default on from v6.19 (aceccac58ad7), and v6.17's
// RUN_TO_PARITY limit to the shortest queued slice (the model has one
// slice for all); see also policy_v612.go.
func init() {
	RegisterPolicy("latest", func() Policy { return newLatest() })
}

func newLatest() *reworkPolicy {
	p := newV612()
	p.name = "latest"
	p.kernels = "v6.15–v6.19: v6.12 + the 0.70 ms EEVDF base slice (2ae891b82695) + NEXT_BUDDY's re-implemented wakeup preemption (e837456fdca8)"
	p.knobs.BaseSlice070 = true
	p.knobs.PreemptBuddy = true
	return p
}
