package whatif

import "testing"

func TestLLCNrRunningDecisions(t *testing.T) {
	p := mustPolicy(t, "llc-nr-running")
	llc, die := canonicalCases(p)
	c := numaFloatCase
	c.imb = 1 // min2-src: busiest has 3 > 2 tasks, (16-13)>>1 = 1 kept
	checkLB(t, p, []lbCase{llc, die, c,
		{
			// The unsigned idle_cpus difference reachable from 16b0a7a1a0af:
			// overloaded busiest with more idle CPUs (2) than local (1) in
			// an LLC domain, weight 4, no prefer_sibling: (1-2) wraps to
			// 4294967295, >>1 = 2147483647.
			name: "idle_cpus wraps", env: idleUnderflowCase.env,
			local: idleUnderflowCase.local, busy: idleUnderflowCase.busy,
			wantLocal: GroupHasSpare, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateTask, imb: 2147483647,
		},
	})
	// v5.10 detach: (load >> nr_balance_failed) > imbalance. Active balance
	// after failures for every migration type until v5.12 (e9b9734b7465,
	// numa-float on: migrate_task only).
	env := &LBEnv{MigrationType: MigrateLoad, Imbalance: 300, NrBalanceFailed: 2}
	if !p.AcceptForDetach(env, DetachTask{Load: 1000}) {
		t.Error("1000>>2 = 250 <= 300 rejected")
	}
	failedUtil := &LBEnv{MigrationType: MigrateUtil, NrBalanceFailed: 9, CacheNiceTries: 1}
	if !p.NeedActiveBalance(failedUtil) {
		t.Error("v5.10: failed util imbalance not escalated to active balance")
	}
	for _, name := range []string{"numa-float", "v6.1"} {
		if mustPolicy(t, name).NeedActiveBalance(failedUtil) {
			t.Errorf("%s: failed util imbalance escalated to active balance", name)
		}
	}
	if k := p.Knobs(); k.ImbalancePctDefault != 117 || k.BusyFactor != 16 || !k.IntervalMinusOne {
		t.Errorf("v5.10 tunables: %+v", k)
	}
}
