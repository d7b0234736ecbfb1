package whatif

// The `latest` policy: Linux v6.15–v6.19 (kernel-lb.md §4.8) = `v6.12`
// (delayed dequeue on `v6.10`'s load balancer) with the EEVDF base slice
// of 0.70 ms × the CPU factor (2ae891b82695 "sched: Reduce the default
// slice to avoid tasks getting an extra tick", v6.15; 0.75 ms before, but
// backported to the 6.6.89 and 6.12.26 stable releases, which the
// release-to-policy map cannot tell: `--apply 2ae891b82695` there).
//
// Not modelled: v6.19's NI_RANDOM newidle and SD_SERIALIZE gate, and
// NEXT_BUDDY re-implemented for EEVDF; see also policy_v612.go.
func init() {
	RegisterPolicy("latest", func() Policy { return newLatest() })
}

func newLatest() *reworkPolicy {
	p := newV612()
	p.name = "latest"
	p.kernels = "v6.15–v6.19: v6.12 + the 0.70 ms EEVDF base slice (2ae891b82695)"
	p.knobs.BaseSlice070 = true
	return p
}
