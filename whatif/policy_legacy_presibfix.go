package whatif

// The `legacy-presibfix` policy: `legacy` (v5.4 rules) with the
// prefer-sibling demotion as it was before Srikar Dronamraju's "sched:
// Prefer sibling only if local group is under-utilized" (~v4.15; commit id
// and exact pre-fix text not found, kernel-lb.md §9.2): a non-local group
// is marked group_no_capacity whenever it runs more than one task and the
// local group has capacity (reconstructed). Everything else is v5.4's, so
// a comparison with `legacy` isolates that one rule (seed c, §6.3: ebizzy
// migrations on SMT8 POWER8). Not a faithful v4.14: the other changes
// between v4.14 and v5.4 (misfit, util_est in placement, ...) are v5.4's.
func init() {
	RegisterPolicy("legacy-presibfix", func() Policy { return legacyPolicy{presibfix: true} })
}
