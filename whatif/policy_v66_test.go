package whatif

import "testing"

// busyDstSiblingCase: prefer_sibling domain, busy dst (NOT_IDLE), local
// 1 task on 4 CPUs, busiest 4 tasks on 4 CPUs (fully busy).
//   - v5.5–v6.5: prefer_sibling and 4 > 1+1 -> force; task path
//     (4-1)>>1 = 1.
//   - v6.6: sibling_imbalance is 0 for a busy dst -> no force; busiest
//     not overloaded and dst busy -> balanced.
var busyDstSiblingCase = lbCase{
	name: "busy dst prefer_sibling", env: LBEnv{ImbalancePct: 117, Idle: CPUNotIdle},
	local:         SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 3, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024, GroupLoad: 1024, Cores: 4},
	busy:          SGStats{GroupCapacity: 4096, GroupWeight: 4, SumNrRunning: 4, SumHNrRunning: 4, GroupUtil: 4096, GroupRunnable: 4096, GroupLoad: 4096, Cores: 4},
	preferSibling: true,
	wantLocal:     GroupHasSpare, wantBusy: GroupFullyBusy, verdict: Balanced,
}

func TestV66Decisions(t *testing.T) {
	p := mustPolicy(t, "v6.6")
	checkLB(t, p, []lbCase{
		busyDstSiblingCase,
		{
			// SMT: an idle core (local) and a core running 2 tasks; dst idle,
			// prefer_sibling (SMT child). The busy core is fully busy, and
			// as an SMT group with > 1 task: group_smt_balance.
			// sibling_imbalance: 1 core each -> 2-0 = 2 > 1 -> force;
			// smt_balance -> migrate_task 1.
			name: "smt balance", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUIdle},
			local:         SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 2, Cores: 1, Flags: smtCore},
			busy:          SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2048, GroupRunnable: 2048, GroupLoad: 2048, Cores: 1, Flags: smtCore},
			preferSibling: true,
			wantLocal:     GroupHasSpare, wantBusy: GroupSMTBalance, verdict: ForceBalance, mt: MigrateTask, imb: 1,
		},
		{
			// sibling_imbalance between groups of different core counts: a
			// 2-core local group with 1 task and a 4-core busiest group with
			// 6 tasks, prefer_sibling, idle dst: 2*6 - 4*1 = 8,
			// (2*8 + 2 + 4)/(2+4) = 3 > 1 -> force; the busiest (6 > 4 CPUs,
			// util 4096*100 < 4096*117 -> overloaded) above the LLC: util
			// path max(2048, 1024) - 1024 = 1024.
			name: "sibling imbalance", env: LBEnv{ImbalancePct: 117, Idle: CPUIdle},
			local:         SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024, GroupLoad: 1024, Cores: 2},
			busy:          SGStats{GroupCapacity: 4096, GroupWeight: 4, SumNrRunning: 6, SumHNrRunning: 6, GroupUtil: 4096, GroupRunnable: 6144, GroupLoad: 6144, Cores: 4},
			preferSibling: true,
			wantLocal:     GroupHasSpare, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateUtil, imb: 1024,
		},
		overflowCase(0),
	})
	// group_smt_balance is never set for a busy dst, nor on the wakeup path
	// (Classify alone).
	g := &SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2048, GroupRunnable: 2048, Flags: smtCore}
	if got := p.Classify(&LBEnv{ImbalancePct: 117}, g); got != GroupFullyBusy {
		t.Errorf("Classify: %v", got)
	}
	if k := p.Knobs(); !k.EEVDF || !k.SISUtil || !k.NewidleGate516 {
		t.Errorf("knobs %+v", k)
	}
	// v6.1 as 6.1.y has it now (the guard backported): 0. The v6.1 rules
	// without the guard (v5.18–v6.3, an early 6.1.y): the kernel's
	// unsigned avg_load differences wrap, giving a huge imbalance.
	checkLB(t, newV61(), []lbCase{overflowCase(0)})
	pre := newV61()
	pre.r.OverflowGuard = false
	checkLB(t, pre, []lbCase{overflowCase(18014398509481484)})
}

// overflowCase: a fully busy local group (2 tasks on 2 CPUs, load 3000:
// avg_load 1500) and an overloaded busiest (3 tasks, load 2000: avg_load
// 1000); domain avg 5000*1024/4096 = 1250. The local group is more
// loaded. v6.4's guard (91dcf1e8068e): imbalance 0. Before: (1000-1250)
// and (1250-1500) wrap as unsigned long; min((2^64-250)*2048,
// (2^64-250)*2048) mod 2^64 / 1024 = 2^54 - 500.
func overflowCase(imb int64) lbCase {
	return lbCase{
		name: "imbalance overflow", env: LBEnv{ImbalancePct: 117, Idle: CPUNotIdle},
		local:     SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2040, GroupRunnable: 2040, GroupLoad: 3000},
		busy:      SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 2048, GroupRunnable: 3072, GroupLoad: 2000},
		wantLocal: GroupFullyBusy, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateLoad, imb: imb,
	}
}
