package whatif

import "testing"

// The prefer-sibling demotion (v5.4, MC domain above SMT: groups are SMT
// cores, prefer_sibling from the SMT child). Local core: 1 task, the idle
// dst; busiest core: 2 tasks. Runnable loads 1024 per task.
//   - legacy: busiest 2 > local 1 + 1 is false -> no demotion, both
//     group_other; avg_load 512 (local) and 1024 (busiest), domain avg
//     3072*1024/4096 = 768; CPU_IDLE and busiest not overloaded, local
//     idle 1 <= busiest idle 0 + 1 -> balanced.
//   - legacy-presibfix: busiest has > 1 task and local has capacity ->
//     no_capacity -> overloaded -> force; imbalance min(256*2048,
//     256*2048)/1024 = 512 < load_per_task 1024 -> fix_small_imbalance:
//     imbn 2, scaled lpt 1024*1024/2048 = 512, 1024+512 >= 512+2*512 ->
//     imbalance = 1024: the task moves (and the counts swap: ping-pong).
var presibCase = lbCase{
	name: "prefer-sibling demotion", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUIdle},
	local:         SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024, GroupLoad: 1024, Flags: smtCore},
	busy:          SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2048, GroupRunnable: 2048, GroupLoad: 2048, Flags: smtCore},
	preferSibling: true,
	wantLocal:     GroupHasSpare, wantBusy: GroupHasSpare, verdict: Balanced,
}

func TestLegacyDecisions(t *testing.T) {
	p := mustPolicy(t, "legacy")
	checkLB(t, p, []lbCase{
		presibCase,
		{
			// Busy dst (NOT_IDLE), both groups with 1 and 3 tasks on 2 CPUs:
			// busiest no_capacity (3 > 2, util 2048*100 < 2048*117) but the
			// idle-dst force does not apply; avg_load 512 vs 1536, domain
			// 4096*1024/4096 = 1024; 100*1536 > 117*512 -> force.
			// max_pull = 1536-1024 = 512, imbalance min(512*2048,
			// (1024-512)*2048)/1024 = 1024 >= lpt 1024.
			name: "busy dst load", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUNotIdle},
			local:     SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupLoad: 1024},
			busy:      SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 2048, GroupLoad: 3072},
			wantLocal: GroupHasSpare, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateLoad, imb: 1024,
		},
		{
			// Both overloaded (NOT_IDLE): local 3 tasks, busiest 5 tasks on
			// 2 CPUs each. avg_load 1536 and 2560, domain 8192*1024/4096 =
			// 2048; load_above_capacity = (5*1024-2048)*1024/2048 = 1536;
			// max_pull = min(512, 1536) = 512; imbalance min(512*2048,
			// 512*2048)/1024 = 1024 >= lpt 1024.
			name: "both overloaded", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUNotIdle},
			local:     SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 2048, GroupLoad: 3072},
			busy:      SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 5, SumHNrRunning: 5, GroupUtil: 2048, GroupLoad: 5120},
			wantLocal: GroupOverloaded, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateLoad, imb: 1024,
		},
		{
			// Within imbalance_pct (NEWLY_IDLE): 4 vs 3 equal tasks on 4
			// CPUs each: avg 1024 vs 768, domain 896, 100*1024 <= 117*768 =
			// 89856? no (102400 > 89856) -> force; max_pull 128, imbalance
			// min(128*4096, 128*4096)/1024 = 512 < lpt 1024 ->
			// fix_small_imbalance: lpt equal -> imbn 2, scaled lpt 256,
			// 1024+256 >= 768+512 -> imbalance 1024.
			name: "fix_small_imbalance", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUNewlyIdle},
			local:     SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 1, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 3072, GroupLoad: 3072},
			busy:      SGStats{GroupCapacity: 4096, GroupWeight: 4, SumNrRunning: 4, SumHNrRunning: 4, GroupUtil: 4096, GroupLoad: 4096},
			wantLocal: GroupHasSpare, wantBusy: GroupHasSpare, verdict: ForceBalance, mt: MigrateLoad, imb: 1024,
		},
	})
	env := &LBEnv{Imbalance: 1024}
	if !p.AcceptForDetach(env, DetachTask{Load: 2000}) || env.Imbalance != -976 {
		t.Errorf("load 2000 (half 1000 <= 1024) should be detached, imbalance %d", env.Imbalance)
	}
	if p.AcceptForDetach(&LBEnv{Imbalance: 400}, DetachTask{Load: 1000}) {
		t.Error("load/2 = 500 > 400 accepted")
	}
	if !p.NeedActiveBalance(&LBEnv{NrBalanceFailed: 4, CacheNiceTries: 1, MigrationType: MigrateLoad}) {
		t.Error("v5.4 active balance after cache_nice_tries+2 failures")
	}
}

func TestLegacyPresibfixDecisions(t *testing.T) {
	c := presibCase
	c.wantBusy, c.verdict, c.mt, c.imb = GroupOverloaded, ForceBalance, MigrateLoad, 1024
	checkLB(t, mustPolicy(t, "legacy-presibfix"), []lbCase{c})
}
